//! Runs the shared machine rules and places each problem on the token that causes it.

use proc_macro2::Span;
use syn::LitStr;
use toolgate_machine::MachineError;

use super::MachineAst;

/// Every rule the declaration breaks, each at its own token.
pub(crate) fn validate(machine: &MachineAst) -> Vec<syn::Error> {
    let mut errors: Vec<syn::Error> = machine
        .spec()
        .validate()
        .into_iter()
        .map(|error| syn::Error::new(span_of(machine, &error), error.to_string()))
        .collect();
    for (i, id) in machine.ids.iter().enumerate() {
        if machine.ids[..i].iter().any(|earlier| earlier.value() == id.value()) {
            errors.push(syn::Error::new(id.span(), format!("machine id `{}` is listed twice", id.value())));
        }
    }
    // An event listed twice in one state (its first entry is the one the spec keeps).
    for state in &machine.states {
        for (i, (event, _)) in state.on.iter().enumerate() {
            if state.on[..i].iter().any(|(e, _)| e.value == event.value) {
                let error = MachineError::DuplicateEvent {
                    machine: machine.id().value(),
                    state: state.name.value.clone(),
                    event: event.value.clone(),
                };
                errors.push(syn::Error::new(event.span, error.to_string()));
            }
        }
    }
    if let (Some(context), None) = (&machine.context, &machine.key) {
        errors.push(syn::Error::new(
            syn::spanned::Spanned::span(context),
            "a context is each instance's data, and this machine has no instances: add `key: \"…\"` (the argument naming an instance)",
        ));
    }
    errors
}

fn span_of(machine: &MachineAst, error: &MachineError) -> Span {
    fn states<'a>(machine: &'a MachineAst, name: &'a str) -> impl Iterator<Item = &'a super::ast::StateAst> {
        machine.states.iter().filter(move |s| s.name.value == name)
    }
    let state = |name| states(machine, name);
    let found = match error {
        MachineError::EmptyId => Some(machine.id().span()),
        MachineError::InvalidKey { .. } => machine.key.as_ref().map(|k| k.span()),
        MachineError::TenantScopeWithoutKey { .. } => machine.tenant_scoped,
        MachineError::OwnerWithoutKey { .. } => machine.principal_owned,
        MachineError::MintWithoutKey { .. } | MachineError::InvalidMint { .. } => {
            machine.mint.as_ref().map(|m| m.span())
        }
        MachineError::MissingInitial { .. } => None,
        MachineError::UnknownInitial { .. } => machine.initial.as_ref().map(|i| i.span()),
        MachineError::NoStates { .. } => Some(machine.states_key),
        MachineError::DuplicateState { state: name, .. } => state(name).last().map(|s| s.name.span),
        MachineError::DuplicateEvent { state: name, event, .. } => {
            state(name).flat_map(|s| s.on.iter().filter(|(e, _)| &e.value == event)).last().map(|(e, _)| e.span)
        }
        MachineError::UnreachableBranch { state: name, event, .. } => {
            state(name).flat_map(|s| s.on.iter().filter(|(e, _)| &e.value == event)).next().map(|(e, _)| e.span)
        }
        MachineError::InvalidGuard { guard, .. } => (machine.states.iter())
            .flat_map(|s| s.on.iter().flat_map(|(_, branches)| branches.iter().filter_map(|b| b.guard.as_ref())))
            .find(|g| &g.value() == guard)
            .map(LitStr::span),
        MachineError::UnknownTarget { state: name, event, target, .. } => state(name)
            .flat_map(|s| s.on.iter().filter(|(e, _)| &e.value == event))
            .flat_map(|(_, branches)| branches.iter().filter(|b| &b.target.value() == target))
            .next()
            .map(|b| b.target.span()),
        MachineError::UnknownDelayedTarget { state: name, target, .. } => state(name)
            .flat_map(|s| s.after.iter().filter(|(_, _, t)| &t.value() == target))
            .next()
            .map(|(_, _, t)| t.span()),
        MachineError::AfterWithoutKey { state: name, .. } => {
            state(name).flat_map(|s| s.after.first()).next().map(|(delay, _, _)| delay.span())
        }
        MachineError::FinalWithTransitions { state: name, .. } => state(name).find_map(|s| s.final_span),
        MachineError::Unreachable { state: name, .. } => state(name).next().map(|s| s.name.span),
    };
    found.unwrap_or_else(Span::call_site)
}
