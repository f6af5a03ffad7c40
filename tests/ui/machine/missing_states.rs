// No `states` key at all.
toolgate::machine! {
    id: "invoice",
    initial: "draft",
}

fn main() {}
