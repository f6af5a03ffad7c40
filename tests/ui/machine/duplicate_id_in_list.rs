// An id listed twice in one declaration: the error is on the second.
toolgate::machine! {
    id: ["bus", "flight", "bus"],
    initial: "idle",
    states: {
        idle: { on: { QUOTE: "quoted" } },
        quoted: { type: "final" },
    }
}

fn main() {}
