//! What the gate tells a call about the instance it names when there is none it may act
//! on — a key never created, or another principal's instance, told alike — and the keys a
//! creating call mints (`mint: "…{n}"`, `mint: "…{random}"`).

use super::Instance;
use crate::auth::Principal;
use crate::error::ToolError;
use crate::fsm::{Machine, Mint};
use crate::records::Records;
use crate::registry::Registry;
use crate::store::{Snapshot, StoreKey};

/// `NOT_FOUND` for a key no creating action of `machine` minted, naming those actions
/// `principal` may see. What another principal's instance of a principal-owned machine is
/// told too: nothing in it depends on the record.
pub(super) fn never_created(
    registry: &Registry,
    principal: Option<&Principal>,
    machine: &Machine,
    id: &str,
) -> ToolError {
    let creators: Vec<String> = (registry.tools().iter())
        .filter(|t| t.creates && t.machine.as_deref().is_some_and(|m| m.id() == machine.id()))
        .filter(|t| t.visible_to(principal))
        .map(|t| format!("`{}`", t.name))
        .collect();
    let how = match creators.as_slice() {
        [] => String::new(),
        creators => format!("; a new one is created by {}, which gives its id", creators.join(" or ")),
    };
    ToolError::not_found(format!("no {} `{id}` exists{how}", machine.id()))
}

/// What a call that waited in vain for its instance's lease (`FLOW_BUSY`) is told: that,
/// unless the instance is another principal's (created since the call named a free id of
/// a machine whose ids clients name), which reads as a key never created — a busy
/// instance must not tell anyone it is someone's.
pub(super) async fn busy_or_hidden(
    (records, registry): (Records<'_>, &Registry),
    principal: Option<&Principal>,
    instance: &Instance<'_>,
    busy: ToolError,
) -> ToolError {
    if !crate::visibility::owner_rule_applies(instance.machine, principal) {
        return busy;
    }
    match records.load(&instance.key).await {
        Ok(loaded) if loaded.hidden_from(true, principal) => {
            never_created(registry, principal, instance.machine, &instance.id)
        }
        _ => busy,
    }
}

/// 128 random bits as 26 characters of lowercase base32 (RFC 4648's alphabet, unpadded):
/// what `{random}` in a `mint` format becomes.
fn random_key() -> String {
    const ALPHABET: &[u8; 32] = b"abcdefghijklmnopqrstuvwxyz234567";
    let mut bytes = [0; 16];
    getrandom::fill(&mut bytes).expect("the OS random number generator is unavailable");
    let bits = u128::from_le_bytes(bytes);
    (0..26).map(|i| ALPHABET[((bits >> (i * 5)) & 31) as usize] as char).collect()
}

/// A creating call's new instance of `machine` (whose keys are `minting`: its format and
/// how the number is drawn), under a key no instance has, and its record (none yet): the
/// next number of the machine's counter (per tenant for a tenant-scoped or
/// principal-owned machine), or 128 random bits.
pub(super) async fn mint<'a>(
    records: Records<'_>,
    machine: &'a Machine,
    (format, mint): (&str, Mint),
    principal: Option<&Principal>,
) -> Result<(Instance<'a>, Snapshot), ToolError> {
    let tenant = principal.and_then(Principal::tenant);
    let counter = match (machine.is_principal_owned(), machine.is_tenant_scoped()) {
        (true, _) => StoreKey::minted(machine.id(), Some(tenant.unwrap_or_default())),
        (false, true) => StoreKey::minted(machine.id(), tenant),
        (false, false) => StoreKey::minted(machine.id(), None),
    };
    for _ in 0..64 {
        let minted = match mint {
            Mint::Counter => records.mint(&counter).await?.to_string(),
            Mint::Random => random_key(),
        };
        let id = format.replace(mint.placeholder(), &minted);
        let key = crate::visibility::instance_key(machine, &id, principal);
        let before = records.load(&key).await?;
        if before.version == 0 {
            return Ok((Instance { machine, id, key }, before));
        }
    }
    Err(ToolError::internal(format_args!("no free `{}` key after 64 minted keys", machine.id())))
}
