//! The native realm's store: users (passwords hashed with argon2id, PHC strings), roles and
//! API keys (secrets hashed with SHA-256: they are 128 random bits, so a slow hash adds
//! nothing), kept in `{path.data}/_security.json` and written whole, atomically (a temporary
//! file renamed over the old one), on every change, as ES keeps them in its `.security` index.

use super::privileges::Role;
use argon2::password_hash::{PasswordHash, PasswordHasher, PasswordVerifier, SaltString};
use argon2::Argon2;
use base64::Engine as _;
use lode_engine::{EsError, EsResult};
use parking_lot::Mutex;
use rand::RngCore;
use serde::{Deserialize, Serialize};
use serde_json::{Map, Value};
use sha2::{Digest, Sha256};
use std::collections::BTreeMap;
use std::path::{Path, PathBuf};

pub const FILE: &str = "_security.json";

#[derive(Clone, Debug, Serialize, Deserialize)]
pub struct User {
    /// argon2id PHC string; `None`: no password set (cannot log in).
    pub password_hash: Option<String>,
    pub roles: Vec<String>,
    #[serde(default)]
    pub full_name: Option<String>,
    #[serde(default)]
    pub email: Option<String>,
    #[serde(default)]
    pub metadata: Map<String, Value>,
    pub enabled: bool,
}

#[derive(Clone, Debug, Serialize, Deserialize)]
pub struct ApiKey {
    pub name: String,
    /// hex SHA-256 of the secret
    pub hash: String,
    pub username: String,
    pub realm: String,
    pub creation: i64,
    pub expiration: Option<i64>,
    pub invalidated: bool,
    #[serde(default)]
    pub invalidation: Option<i64>,
    /// the key's own `role_descriptors` (empty: the owner's privileges)
    pub role_descriptors: Map<String, Value>,
    /// the owner's role descriptors when the key was created (ES's `limited_by`)
    pub limited_by: Map<String, Value>,
    #[serde(default)]
    pub metadata: Map<String, Value>,
}

#[derive(Default, Debug, Serialize, Deserialize)]
pub struct Data {
    pub users: BTreeMap<String, User>,
    pub roles: BTreeMap<String, Value>,
    pub api_keys: BTreeMap<String, ApiKey>,
    /// role mappings by name (`role_mapping.rs`), as given and validated
    #[serde(default)]
    pub role_mappings: BTreeMap<String, Value>,
}

pub struct Store {
    path: PathBuf,
    pub data: Mutex<Data>,
}

pub fn hash_password(password: &str) -> String {
    let salt = SaltString::generate(&mut argon2::password_hash::rand_core::OsRng);
    Argon2::default()
        .hash_password(password.as_bytes(), &salt)
        .expect("argon2 hashes any password")
        .to_string()
}

pub fn verify_password(hash: &str, password: &str) -> bool {
    PasswordHash::new(hash)
        .map(|h| {
            Argon2::default()
                .verify_password(password.as_bytes(), &h)
                .is_ok()
        })
        .unwrap_or(false)
}

pub fn sha256_hex(s: &[u8]) -> String {
    let d = Sha256::digest(s);
    d.iter().map(|b| format!("{b:02x}")).collect()
}

/// Compares two digests in time independent of where they differ.
pub fn same_digest(a: &str, b: &str) -> bool {
    a.len() == b.len()
        && a.bytes()
            .zip(b.bytes())
            .fold(0u8, |acc, (x, y)| acc | (x ^ y))
            == 0
}

/// A random identifier or secret as ES makes them: 16 random bytes, URL-safe base64 without
/// padding (22 characters).
pub fn random_token() -> String {
    let mut b = [0u8; 16];
    rand::thread_rng().fill_bytes(&mut b);
    base64::engine::general_purpose::URL_SAFE_NO_PAD.encode(b)
}

/// `base64(id:api_key)`, the `encoded` value of a created key and the credential of
/// `Authorization: ApiKey`.
pub fn encode_api_key(id: &str, key: &str) -> String {
    base64::engine::general_purpose::STANDARD.encode(format!("{id}:{key}"))
}

/// The (id, key) of an `ApiKey` credential.
pub fn decode_api_key(encoded: &str) -> Option<(String, String)> {
    let bytes = base64::engine::general_purpose::STANDARD
        .decode(encoded.trim())
        .ok()?;
    let s = String::from_utf8(bytes).ok()?;
    let (id, key) = s.split_once(':')?;
    Some((id.to_string(), key.to_string()))
}

/// The (user, password) of a `Basic` credential.
pub fn decode_basic(encoded: &str) -> Option<(String, String)> {
    let bytes = base64::engine::general_purpose::STANDARD
        .decode(encoded.trim())
        .ok()?;
    let s = String::from_utf8(bytes).ok()?;
    let (u, p) = s.split_once(':')?;
    Some((u.to_string(), p.to_string()))
}

pub fn now_millis() -> i64 {
    std::time::SystemTime::now()
        .duration_since(std::time::UNIX_EPOCH)
        .map(|d| d.as_millis() as i64)
        .unwrap_or(0)
}

impl Store {
    pub fn open(data_dir: &Path) -> anyhow_free::Result<Store> {
        let path = data_dir.join(FILE);
        let data = if path.exists() {
            let text = std::fs::read_to_string(&path)
                .map_err(|e| format!("reading {}: {e}", path.display()))?;
            serde_json::from_str(&text).map_err(|e| format!("parsing {}: {e}", path.display()))?
        } else {
            Data::default()
        };
        Ok(Store {
            path,
            data: Mutex::new(data),
        })
    }

    /// Writes the store (call with the lock held, after a change).
    pub fn save(&self, data: &Data) -> EsResult<()> {
        let write = || -> std::io::Result<()> {
            if let Some(dir) = self.path.parent() {
                std::fs::create_dir_all(dir)?;
            }
            let tmp = self.path.with_extension("json.tmp");
            let bytes = serde_json::to_vec_pretty(data).map_err(std::io::Error::other)?;
            {
                use std::io::Write;
                let mut f = std::fs::File::create(&tmp)?;
                f.write_all(&bytes)?;
                f.sync_all()?;
            }
            std::fs::rename(&tmp, &self.path)
        };
        write().map_err(|e| EsError::internal(format!("failed to write the security store: {e}")))
    }

    /// Sets (creating when absent) a user's password and optionally its roles: the
    /// `lode users` commands and `ELASTIC_PASSWORD`.
    pub fn set_password(
        &self,
        username: &str,
        password: &str,
        roles: Option<Vec<String>>,
    ) -> EsResult<()> {
        let hash = hash_password(password);
        let mut d = self.data.lock();
        let user = d.users.entry(username.to_string()).or_insert_with(|| User {
            password_hash: None,
            roles: vec![],
            full_name: None,
            email: None,
            metadata: Map::new(),
            enabled: true,
        });
        user.password_hash = Some(hash);
        if let Some(r) = roles {
            user.roles = r;
        }
        self.save(&d)
    }

    /// A role by name: the built-in ones, then the stored ones.
    pub fn role(&self, name: &str) -> Option<Role> {
        super::privileges::builtin(name).or_else(|| {
            let d = self.data.lock();
            d.roles.get(name).and_then(|v| Role::parse(name, v).ok())
        })
    }
}

/// A tiny string error for `Store::open` (the CLI and the server turn it into their own).
pub mod anyhow_free {
    pub type Result<T> = std::result::Result<T, String>;
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn passwords_are_hashed_and_verified() {
        let h = hash_password("s3cret-pw");
        assert!(h.starts_with("$argon2id$"));
        assert!(!h.contains("s3cret-pw"));
        assert!(verify_password(&h, "s3cret-pw"));
        assert!(!verify_password(&h, "s3cret-pX"));
        assert!(!verify_password("garbage", "s3cret-pw"));
        // salted: the same password hashes differently
        assert_ne!(h, hash_password("s3cret-pw"));
    }

    #[test]
    fn api_key_credentials_round_trip() {
        let id = random_token();
        let key = random_token();
        assert_eq!(id.len(), 22);
        let enc = encode_api_key(&id, &key);
        assert_eq!(decode_api_key(&enc), Some((id.clone(), key.clone())));
        // ES's documented example: base64("VuaCfGcBCdbkQm-e5aOx:ui2lp2axTNmsyakw9tvNnw")
        assert_eq!(
            encode_api_key("VuaCfGcBCdbkQm-e5aOx", "ui2lp2axTNmsyakw9tvNnw"),
            "VnVhQ2ZHY0JDZGJrUW0tZTVhT3g6dWkybHAyYXhUTm1zeWFrdzl0dk5udw=="
        );
        assert_eq!(decode_api_key("not base64!"), None);
        assert_eq!(
            decode_basic("ZWxhc3RpYzpjaGFuZ2VtZQ=="),
            Some(("elastic".into(), "changeme".into()))
        );
        assert_eq!(sha256_hex(b"abc").len(), 64);
    }

    #[test]
    fn the_store_never_holds_a_password_in_clear() {
        let dir = tempfile::tempdir().unwrap();
        let s = Store::open(dir.path()).unwrap();
        s.set_password("elastic", "very-secret-9", Some(vec!["superuser".into()]))
            .unwrap();
        let text = std::fs::read_to_string(dir.path().join(FILE)).unwrap();
        assert!(!text.contains("very-secret-9"));
        let s2 = Store::open(dir.path()).unwrap();
        let d = s2.data.lock();
        let u = &d.users["elastic"];
        assert!(verify_password(
            u.password_hash.as_ref().unwrap(),
            "very-secret-9"
        ));
        assert_eq!(u.roles, vec!["superuser"]);
    }
}
