//! Secrets: derived generation, sealing (SealedSecrets and SOPS+age), zero-diff reuse, unsealing.
//!
//! Pure: no filesystem, environment or clock. Randomness comes in as an argument
//! (`&mut R` with `R: rand::CryptoRng + ?Sized`), so tests pass a seeded generator; the clock (SOPS `lastmodified`) comes in
//! as a string.
//!
//! The render stage produces [`PlainSecret`]s in memory; [`seal::seal`] turns each into the
//! object that is written (a `SealedSecret`, or a SOPS-encrypted `Secret`). A plaintext Secret
//! never reaches the writer.

pub mod bytes;
pub mod derive;
pub mod fingerprint;
pub mod resolve;
pub mod seal;
pub mod sealed;
pub mod sops;

pub use derive::MasterKey;
pub use fingerprint::FingerprintKey;
pub use resolve::{MapInputs, ResolveError, SecretInputs, resolve};
pub use seal::{Sealer, seal};
pub use sealed::{Certificate, PrivateKey};

use std::collections::BTreeMap;
use zeroize::Zeroizing;

/// The scope of a SealedSecret (which names and namespaces it may be unsealed under).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub enum Scope {
    /// Only this name in this namespace (OAEP label `namespace/name`).
    #[default]
    Strict,
    /// Any name in this namespace (label `namespace`, annotation `namespace-wide`).
    NamespaceWide,
    /// Any name anywhere (empty label, annotation `cluster-wide`).
    ClusterWide,
}

/// A Secret before sealing. Lives in memory only; never serialized as is.
#[derive(Clone, PartialEq, Eq, Default)]
pub struct PlainSecret {
    /// `metadata.name`.
    pub name: String,
    /// `metadata.namespace`.
    pub namespace: String,
    /// `type`, e.g. `Opaque` or `kubernetes.io/dockerconfigjson`.
    pub kind: String,
    /// Labels for the Secret (copied to the SealedSecret template, and the outer object).
    pub labels: BTreeMap<String, String>,
    /// Annotations for the Secret.
    pub annotations: BTreeMap<String, String>,
    /// The plaintext values by key.
    pub data: BTreeMap<String, Zeroizing<Vec<u8>>>,
    /// SealedSecret scope.
    pub scope: Scope,
}

impl std::fmt::Debug for PlainSecret {
    // NB: never print values, even in debug output.
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("PlainSecret")
            .field("name", &self.name)
            .field("namespace", &self.namespace)
            .field("kind", &self.kind)
            .field("keys", &self.data.keys().collect::<Vec<_>>())
            .field("scope", &self.scope)
            .finish_non_exhaustive()
    }
}
