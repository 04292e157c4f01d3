//! SigV4 signing of a Bedrock request with `aws-sigv4` (AWS's own Rust signer): the request's
//! headers but `user-agent` (which proxies rewrite) and the exact body bytes, for the service
//! `bedrock` in the provider's region, at the time of each attempt (a retry signs again).

use std::time::SystemTime;

use aws_credential_types::Credentials;
use aws_sigv4::http_request::{SignableBody, SignableRequest, SigningSettings, sign as sigv4};
use aws_sigv4::sign::v4;
use bytes::Bytes;
use http::Request;
use http_body_util::Full;
use threadline_wire::service::{ServiceError, ServiceErrorKind};

use crate::secret::AwsCredentials;

/// Signs `request` (whose body is `body`) for `service` in `region` with `credentials`.
/// The signature's headers (`authorization`, `x-amz-date`, `x-amz-security-token`) are added
/// as sensitive values.
pub(crate) fn sign(
    request: &mut Request<Full<Bytes>>,
    body: &[u8],
    credentials: &AwsCredentials,
    region: &str,
    service: &str,
) -> Result<(), ServiceError> {
    let failed = |what: &str| {
        ServiceError::new(
            ServiceErrorKind::Connection,
            format!("cannot sign the request with SigV4: {what}"),
        )
    };
    let secret = credentials
        .secret_access_key()
        .secret_str()
        .ok_or_else(|| failed("the secret access key is not text"))?;
    let token = match credentials.session_token() {
        Some(token) => Some(
            token
                .secret_str()
                .ok_or_else(|| failed("the session token is not text"))?
                .to_owned(),
        ),
        None => None,
    };
    let identity = Credentials::new(
        credentials.access_key_id(),
        secret,
        token,
        None,
        "threadline",
    )
    .into();
    let params = v4::SigningParams::builder()
        .identity(&identity)
        .region(region)
        .name(service)
        .time(SystemTime::now())
        .settings(SigningSettings::default())
        .build()
        .map_err(|e| failed(&e.to_string()))?
        .into();
    let uri = request.uri().to_string();
    let headers: Vec<(&str, &str)> = request
        .headers()
        .iter()
        .filter_map(|(name, value)| Some((name.as_str(), value.to_str().ok()?)))
        .collect();
    let signable = SignableRequest::new(
        request.method().as_str(),
        &uri,
        headers.into_iter(),
        SignableBody::Bytes(body),
    )
    .map_err(|e| failed(&e.to_string()))?;
    let (instructions, _signature) = sigv4(signable, &params)
        .map_err(|e| failed(&e.to_string()))?
        .into_parts();
    let (headers, _params) = instructions.into_parts();
    for header in headers {
        let mut value = http::HeaderValue::from_str(header.value())
            .map_err(|_| failed("a signature header is not a valid header value"))?;
        value.set_sensitive(header.sensitive() || header.name() == "authorization");
        let name = http::HeaderName::from_bytes(header.name().as_bytes())
            .map_err(|_| failed("a signature header has an invalid name"))?;
        request.headers_mut().insert(name, value);
    }
    Ok(())
}
