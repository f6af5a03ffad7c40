// An empty `states`: the error is on the `states` key.
toolgate::machine! {
    id: "invoice",
    initial: "draft",
    states: {}
}

fn main() {}
