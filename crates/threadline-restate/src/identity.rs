//! Request identity: which Restate servers a worker obeys.
//!
//! A Restate server configured with an Ed25519 private key
//! (`worker.invoker.request-identity-private-key-pem-file`) signs every request it sends to a
//! deployment (discovery and each invocation) with a short-lived JWT. A worker given the
//! matching public key ([`IdentityKey`], `publickeyv1_…` as the server logs it at startup)
//! answers 401 to any request that is unsigned or signed by another key; the SDK's verifier
//! does the checking, and this module gives it its signature backend: `jsonwebtoken`'s crypto
//! provider, backed by ring (already the workspace's TLS backend) for EdDSA only, the one
//! algorithm Restate signs with.

use std::str::FromStr;
use std::sync::Once;

use jsonwebtoken::crypto::{CryptoProvider, JwkUtils, JwtSigner, JwtVerifier};
use jsonwebtoken::errors::{Error as JwtError, ErrorKind as JwtErrorKind};
use jsonwebtoken::jwk::ThumbprintHash;
use jsonwebtoken::signature::{Error as SignatureError, Verifier};
use jsonwebtoken::{Algorithm, AlgorithmFamily, DecodingKey, EncodingKey};
use restate_sdk::prelude::Endpoint;

/// A Restate server's request-identity public key, `publickeyv1_` followed by the base58 of
/// the 32-byte Ed25519 public key (the `kid` the server logs at startup as "Loaded request
/// identity key").
///
/// ```
/// use threadline_restate::IdentityKey;
///
/// let key: IdentityKey = "publickeyv1_ChjENKeMvCtRnqG2mrBK1HmPKufgFUc98K8B3ononQvp".parse()?;
/// assert!(key.as_str().starts_with("publickeyv1_"));
/// assert!("publickeyv1_tooshort".parse::<IdentityKey>().is_err());
/// # Ok::<(), threadline_restate::IdentityKeyError>(())
/// ```
#[derive(Clone, PartialEq, Eq, Hash)]
pub struct IdentityKey(String);

impl IdentityKey {
    /// Parses `key` the way the SDK's verifier does (so a key accepted here is one the worker
    /// can verify with).
    pub fn new(key: &str) -> Result<IdentityKey, IdentityKeyError> {
        let key = key.trim();
        match Endpoint::builder().identity_key(key) {
            Ok(_) => Ok(IdentityKey(key.to_owned())),
            Err(e) => Err(IdentityKeyError::Malformed {
                reason: e.to_string(),
            }),
        }
    }

    /// The key as given (`publickeyv1_…`).
    pub fn as_str(&self) -> &str {
        &self.0
    }
}

impl FromStr for IdentityKey {
    type Err = IdentityKeyError;

    fn from_str(s: &str) -> Result<Self, Self::Err> {
        IdentityKey::new(s)
    }
}

impl std::fmt::Debug for IdentityKey {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_tuple("IdentityKey").field(&self.0).finish()
    }
}

impl std::fmt::Display for IdentityKey {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(&self.0)
    }
}

/// Why an [`IdentityKey`] was refused.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[non_exhaustive]
pub enum IdentityKeyError {
    /// Not a `publickeyv1_` key of 32 base58-encoded bytes.
    #[error("not a Restate request identity key (publickeyv1_…): {reason}")]
    Malformed {
        /// The SDK's reason.
        reason: String,
    },
}

/// Makes ring the process's JWT crypto backend (once; a backend installed before stays).
/// Without one, `jsonwebtoken` panics on the first signed request.
pub(crate) fn install_crypto() {
    static INSTALL: Once = Once::new();
    INSTALL.call_once(|| {
        // Err: another backend was installed first; it verifies EdDSA as well.
        let _ = RING_EDDSA.install_default();
    });
}

/// EdDSA verification with ring; everything else (signing, JWKs, other algorithms) refused.
static RING_EDDSA: CryptoProvider = CryptoProvider {
    signer_factory: no_signer,
    verifier_factory: eddsa_verifier,
    jwk_utils: JwkUtils {
        extract_rsa_public_key_components: |_| {
            Err(JwtErrorKind::InvalidRsaKey(String::new()).into())
        },
        extract_ec_public_key_coordinates: |_, _| Err(JwtErrorKind::InvalidEcdsaKey.into()),
        compute_digest,
    },
};

fn no_signer(_: &Algorithm, _: &EncodingKey) -> Result<Box<dyn JwtSigner>, JwtError> {
    Err(JwtErrorKind::InvalidAlgorithm.into())
}

fn eddsa_verifier(
    algorithm: &Algorithm,
    key: &DecodingKey,
) -> Result<Box<dyn JwtVerifier>, JwtError> {
    if *algorithm != Algorithm::EdDSA {
        return Err(JwtErrorKind::InvalidAlgorithm.into());
    }
    if key.family() != AlgorithmFamily::Ed || key.as_bytes().len() != 32 {
        return Err(JwtErrorKind::InvalidEddsaKey.into());
    }
    Ok(Box::new(RingEdDsa(key.as_bytes().to_vec())))
}

fn compute_digest(data: &[u8], hash: ThumbprintHash) -> Vec<u8> {
    let algorithm = match hash {
        ThumbprintHash::SHA256 => &ring::digest::SHA256,
        ThumbprintHash::SHA384 => &ring::digest::SHA384,
        ThumbprintHash::SHA512 => &ring::digest::SHA512,
    };
    ring::digest::digest(algorithm, data).as_ref().to_vec()
}

/// An Ed25519 public key (32 raw bytes).
struct RingEdDsa(Vec<u8>);

impl Verifier<Vec<u8>> for RingEdDsa {
    fn verify(&self, message: &[u8], signature: &Vec<u8>) -> Result<(), SignatureError> {
        ring::signature::UnparsedPublicKey::new(&ring::signature::ED25519, &self.0)
            .verify(message, signature)
            .map_err(|_| SignatureError::new())
    }
}

impl JwtVerifier for RingEdDsa {
    fn algorithm(&self) -> Algorithm {
        Algorithm::EdDSA
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_key_is_refused_unless_it_is_a_v1_key_of_32_bytes() {
        for bad in [
            "",
            "ChjENKeMvCtRnqG2mrBK1HmPKufgFUc98K8B3ononQvp",
            "publickeyv1_",
            "publickeyv1_0OIl",
            "publickeyv1_ChjENKeMvCtRnqG2mrBK1HmPKufgFUc98K8B3ononQ",
        ] {
            let err = IdentityKey::new(bad).expect_err(bad);
            assert!(
                err.to_string()
                    .starts_with("not a Restate request identity key"),
                "{err}"
            );
        }
        let good = "publickeyv1_ChjENKeMvCtRnqG2mrBK1HmPKufgFUc98K8B3ononQvp";
        assert_eq!(
            IdentityKey::new(&format!(" {good}\n")).map(|k| k.0),
            Ok(good.to_owned())
        );
    }

    #[test]
    fn the_ring_verifier_accepts_the_keys_signature_only() {
        use ring::signature::{Ed25519KeyPair, KeyPair as _};
        let rng = ring::rand::SystemRandom::new();
        let pair = || {
            Ed25519KeyPair::generate_pkcs8(&rng)
                .ok()
                .and_then(|doc| Ed25519KeyPair::from_pkcs8(doc.as_ref()).ok())
        };
        let (Some(signer), Some(other)) = (pair(), pair()) else {
            panic!("key generation failed");
        };
        let signature = signer.sign(b"header.claims").as_ref().to_vec();
        let verifier = |public: &[u8]| {
            eddsa_verifier(&Algorithm::EdDSA, &DecodingKey::from_ed_der(public))
                .map_err(|e| e.to_string())
        };
        let mine = verifier(signer.public_key().as_ref()).expect("an Ed25519 key");
        assert!(mine.verify(b"header.claims", &signature).is_ok());
        assert!(mine.verify(b"header.claimz", &signature).is_err());
        let theirs = verifier(other.public_key().as_ref()).expect("an Ed25519 key");
        assert!(theirs.verify(b"header.claims", &signature).is_err());
        assert!(
            eddsa_verifier(
                &Algorithm::HS256,
                &DecodingKey::from_ed_der(signer.public_key().as_ref())
            )
            .is_err()
        );
    }
}
