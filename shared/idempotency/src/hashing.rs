//! The hash functions Powertools looks up by hashlib name (`hash_function="md5"`).

use md5::Md5;
use sha2::{Digest, Sha224, Sha256, Sha384, Sha512};

/// A hashlib algorithm, by the name Powertools' `hash_function` option takes.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub enum HashFunction {
    /// `hashlib.md5`, Powertools' default.
    #[default]
    Md5,
    /// `hashlib.sha224`.
    Sha224,
    /// `hashlib.sha256`.
    Sha256,
    /// `hashlib.sha384`.
    Sha384,
    /// `hashlib.sha512`.
    Sha512,
}

/// A `hash_function` name that is not one of the five supported (it carries the name given).
#[derive(Debug, thiserror::Error)]
#[error("unsupported hash function {0:?}: use md5, sha224, sha256, sha384 or sha512")]
pub struct UnsupportedHash(pub String);

impl HashFunction {
    /// `hashlib.<name>(text).hexdigest()`
    pub fn hexdigest(self, text: &[u8]) -> String {
        match self {
            HashFunction::Md5 => hex(&Md5::digest(text)),
            HashFunction::Sha224 => hex(&Sha224::digest(text)),
            HashFunction::Sha256 => hex(&Sha256::digest(text)),
            HashFunction::Sha384 => hex(&Sha384::digest(text)),
            HashFunction::Sha512 => hex(&Sha512::digest(text)),
        }
    }

    /// The hashlib name (`"md5"`, `"sha256"`, ...), which [`str::parse`] reads back.
    pub fn name(self) -> &'static str {
        match self {
            HashFunction::Md5 => "md5",
            HashFunction::Sha224 => "sha224",
            HashFunction::Sha256 => "sha256",
            HashFunction::Sha384 => "sha384",
            HashFunction::Sha512 => "sha512",
        }
    }
}

impl std::str::FromStr for HashFunction {
    type Err = UnsupportedHash;

    fn from_str(name: &str) -> Result<Self, Self::Err> {
        match name {
            "md5" => Ok(HashFunction::Md5),
            "sha224" => Ok(HashFunction::Sha224),
            "sha256" => Ok(HashFunction::Sha256),
            "sha384" => Ok(HashFunction::Sha384),
            "sha512" => Ok(HashFunction::Sha512),
            other => Err(UnsupportedHash(other.to_owned())),
        }
    }
}

fn hex(bytes: &[u8]) -> String {
    bytes.iter().map(|b| format!("{b:02x}")).collect()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn known_digests() {
        assert_eq!(
            HashFunction::Md5.hexdigest(b"abc"),
            "900150983cd24fb0d6963f7d28e17f72"
        );
        assert_eq!(
            HashFunction::Sha256.hexdigest(b"abc"),
            "ba7816bf8f01cfea414140de5dae2223b00361a396177a9cb410ff61f20015ad"
        );
        assert!("sha1".parse::<HashFunction>().is_err());
    }
}
