//! HTTP TLS (`xpack.security.http.ssl.*`): a rustls server configuration from PEM files.

use rustls_pki_types::pem::PemObject;
use rustls_pki_types::{CertificateDer, PrivateKeyDer};
use std::path::Path;
use std::sync::Arc;

/// The server configuration for `certificate` (the chain, leaf first) and `key` (PKCS#8,
/// PKCS#1 or SEC1). `certificate_authorities`, when given, must be readable PEM certificates:
/// ES uses them to verify client certificates, which its HTTP layer does not ask for by
/// default (`client_authentication: none`), and neither does Lode.
pub fn server_config(
    certificate: &Path,
    key: &Path,
    certificate_authorities: &[std::path::PathBuf],
) -> Result<Arc<rustls::ServerConfig>, String> {
    let certs: Vec<CertificateDer<'static>> = CertificateDer::pem_file_iter(certificate)
        .map_err(|e| {
            format!(
                "cannot read [xpack.security.http.ssl.certificate] {}: {e}",
                certificate.display()
            )
        })?
        .collect::<Result<_, _>>()
        .map_err(|e| {
            format!(
                "cannot parse [xpack.security.http.ssl.certificate] {}: {e}",
                certificate.display()
            )
        })?;
    if certs.is_empty() {
        return Err(format!(
            "[xpack.security.http.ssl.certificate] {} holds no PEM certificate",
            certificate.display()
        ));
    }
    let key = PrivateKeyDer::from_pem_file(key).map_err(|e| {
        format!(
            "cannot read [xpack.security.http.ssl.key] {}: {e}",
            key.display()
        )
    })?;
    for ca in certificate_authorities {
        let n = CertificateDer::pem_file_iter(ca)
            .map_err(|e| {
                format!(
                    "cannot read [xpack.security.http.ssl.certificate_authorities] {}: {e}",
                    ca.display()
                )
            })?
            .count();
        if n == 0 {
            return Err(format!(
                "[xpack.security.http.ssl.certificate_authorities] {} holds no PEM certificate",
                ca.display()
            ));
        }
    }
    let provider = Arc::new(rustls::crypto::ring::default_provider());
    let mut cfg = rustls::ServerConfig::builder_with_provider(provider)
        .with_safe_default_protocol_versions()
        .map_err(|e| e.to_string())?
        .with_no_client_auth()
        .with_single_cert(certs, key)
        .map_err(|e| format!("invalid TLS certificate or key: {e}"))?;
    cfg.alpn_protocols = vec![b"http/1.1".to_vec()];
    Ok(Arc::new(cfg))
}
