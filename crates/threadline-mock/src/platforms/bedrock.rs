//! Amazon Bedrock's InvokeModel front (docs/platforms.md §1): `POST /model/{id}/invoke` and
//! `/model/{id}/invoke-with-response-stream`, signed with SigV4 for the service `bedrock` (or
//! a Bedrock API key as a bearer), the body without `model` and `stream` and with
//! `anthropic_version: "bedrock-2023-05-31"` and the betas in `anthropic_beta`; errors as AWS
//! errors (`x-amzn-ErrorType`, `{"message": …}`), streams as the AWS event stream.

use std::time::SystemTime;

use http::request::Parts;
use http::{HeaderValue, Response, StatusCode};
use http_body_util::BodyExt;
use serde_json::{Map, Value};
use threadline_wire::model::ModelTable;

use super::event_stream::{CONTENT_TYPE, EventStreamBody};
use super::sigv4::{self, SigV4Refusal};
use super::{Admitted, PlatformCredentials, Refusal};
use crate::server::{MockBody, full};

pub use threadline_wire::platform::{
    BEDROCK_ANTHROPIC_VERSION, BEDROCK_SIGNING_SERVICE as SIGNING_SERVICE,
};

/// The model id and whether the stream endpoint, for a path `/model/{id}/invoke[-with-response-stream]`.
pub(crate) fn route(path: &str) -> Option<(String, bool)> {
    let rest = path.strip_prefix("/model/")?;
    let (id, stream) = if let Some(id) = rest.strip_suffix("/invoke-with-response-stream") {
        (id, true)
    } else {
        (rest.strip_suffix("/invoke")?, false)
    };
    if id.is_empty() || id.contains('/') {
        return None;
    }
    let decoded = percent_encoding::percent_decode_str(id)
        .decode_utf8()
        .ok()?
        .into_owned();
    Some((decoded, stream))
}

/// An AWS error: `x-amzn-ErrorType` names it (with the service's namespace after a `:`), the
/// body carries its message.
pub(crate) fn aws_error(
    status: StatusCode,
    error_type: &str,
    message: &str,
    request_id: &str,
) -> Response<MockBody> {
    let body = serde_json::to_vec(&serde_json::json!({ "message": message }))
        .expect("a JSON object serializes");
    let mut response = Response::new(full(body));
    *response.status_mut() = status;
    let headers = response.headers_mut();
    headers.insert("content-type", HeaderValue::from_static("application/json"));
    let namespace = if matches!(
        error_type,
        "InvalidSignatureException"
            | "UnrecognizedClientException"
            | "MissingAuthenticationTokenException"
    ) {
        "com.amazon.coral.service"
    } else {
        "com.amazon.bedrock"
    };
    let named = format!("{error_type}:http://internal.amazon.com/coral/{namespace}/");
    if let Ok(value) = HeaderValue::from_str(&named) {
        headers.insert("x-amzn-errortype", value);
    }
    if let Ok(value) = HeaderValue::from_str(request_id) {
        headers.insert("x-amzn-requestid", value);
    }
    response
}

fn refusal(status: StatusCode, error_type: &str, message: String, request_id: &str) -> Refusal {
    Refusal {
        response: Box::new(aws_error(status, error_type, &message, request_id)),
        message,
    }
}

fn malformed(what: &str, request_id: &str) -> Refusal {
    refusal(
        StatusCode::BAD_REQUEST,
        "ValidationException",
        format!("Malformed input request: {what}, please reformat your input and try again."),
        request_id,
    )
}

/// Admits an InvokeModel request as Bedrock does, into the canonical request.
pub(crate) fn admit(
    credentials: &PlatformCredentials,
    models: &ModelTable,
    parts: &Parts,
    body: &[u8],
    model: &str,
    stream: bool,
    request_id: &str,
) -> Result<Admitted, Refusal> {
    let authorization = parts
        .headers
        .get("authorization")
        .and_then(|v| v.to_str().ok());
    match authorization.and_then(|a| a.strip_prefix("Bearer ")) {
        // A Bedrock API key: any non-empty one (the mock cannot ask AWS which are valid).
        Some(token) if !token.is_empty() => {}
        _ => sigv4::verify(
            &credentials.aws_access_key_id,
            &credentials.aws_secret_access_key,
            SIGNING_SERVICE,
            parts,
            body,
            SystemTime::now(),
        )
        // Every signature refusal is AWS's 403.
        .map_err(|refused: SigV4Refusal| {
            refusal(
                StatusCode::FORBIDDEN,
                refused.error_type(),
                refused.message(),
                request_id,
            )
        })?,
    }
    let Some(canonical) = models.get(model).map(|row| row.id.clone()) else {
        return Err(refusal(
            StatusCode::BAD_REQUEST,
            "ValidationException",
            "The provided model identifier is invalid.".to_owned(),
            request_id,
        ));
    };
    let Ok(Value::Object(mut fields)) = serde_json::from_slice::<Value>(body) else {
        return Err(malformed("#: expected type: JSONObject", request_id));
    };
    match fields.remove("anthropic_version") {
        Some(Value::String(v)) if super::accepted_version(&v, BEDROCK_ANTHROPIC_VERSION) => {}
        Some(_) => return Err(malformed("#/anthropic_version: invalid value", request_id)),
        None => {
            return Err(malformed(
                "#: required key [anthropic_version] not found",
                request_id,
            ));
        }
    }
    // What the API takes but Bedrock refuses: the model and the stream flag (the path says
    // them). What Bedrock does not offer (on-demand compaction) the validator refuses, from
    // the model table's platform rules, in Bedrock's words.
    for key in ["model", "stream"] {
        if fields.contains_key(key) {
            return Err(malformed(
                &format!("#: extraneous key [{key}] is not permitted"),
                request_id,
            ));
        }
    }
    let beta = match fields.remove("anthropic_beta") {
        None => String::new(),
        Some(Value::Array(betas)) => {
            let names: Option<Vec<&str>> = betas.iter().map(Value::as_str).collect();
            match names {
                Some(names) => names.join(","),
                None => {
                    return Err(malformed(
                        "#/anthropic_beta: expected type: String",
                        request_id,
                    ));
                }
            }
        }
        Some(_) => {
            return Err(malformed(
                "#/anthropic_beta: expected type: JSONArray",
                request_id,
            ));
        }
    };
    let mut request = Map::with_capacity(fields.len() + 2);
    request.insert("model".to_owned(), Value::String(canonical));
    request.extend(fields);
    if stream {
        request.insert("stream".to_owned(), Value::Bool(true));
    }
    Ok(Admitted {
        body: serde_json::to_vec(&Value::Object(request)).expect("JSON serializes"),
        beta,
        count_tokens: false,
    })
}

/// The AWS error an API error envelope of `status` becomes.
fn aws_error_type(status: StatusCode, api_type: &str) -> (StatusCode, &'static str) {
    match (status.as_u16(), api_type) {
        (403, _) | (_, "permission_error") => (StatusCode::FORBIDDEN, "AccessDeniedException"),
        (404, _) | (_, "not_found_error") => (StatusCode::NOT_FOUND, "ResourceNotFoundException"),
        (429, _) | (_, "rate_limit_error") => {
            (StatusCode::TOO_MANY_REQUESTS, "ThrottlingException")
        }
        (529 | 503, _) | (_, "overloaded_error") => (
            StatusCode::SERVICE_UNAVAILABLE,
            "ServiceUnavailableException",
        ),
        (408 | 504, _) | (_, "timeout_error") => {
            (StatusCode::REQUEST_TIMEOUT, "ModelTimeoutException")
        }
        (400..=499, _) => (StatusCode::BAD_REQUEST, "ValidationException"),
        _ => (StatusCode::INTERNAL_SERVER_ERROR, "InternalServerException"),
    }
}

/// The canonical answer in Bedrock's shape: an error as the AWS error it becomes, a stream as
/// the event stream, a message as it is.
pub(crate) async fn respond(response: Response<MockBody>, request_id: &str) -> Response<MockBody> {
    let status = response.status();
    let streamed = response
        .headers()
        .get("content-type")
        .and_then(|v| v.to_str().ok())
        .is_some_and(|v| v.starts_with("text/event-stream"));
    if status.is_success() {
        let (mut parts, body) = response.into_parts();
        parts.headers.remove("request-id");
        if let Ok(value) = HeaderValue::from_str(request_id) {
            parts.headers.insert("x-amzn-requestid", value);
        }
        if !streamed {
            return Response::from_parts(parts, body);
        }
        parts
            .headers
            .insert("content-type", HeaderValue::from_static(CONTENT_TYPE));
        parts.headers.insert(
            "x-amzn-bedrock-content-type",
            HeaderValue::from_static("application/json"),
        );
        parts.headers.remove("cache-control");
        return Response::from_parts(parts, EventStreamBody::new(body).boxed());
    }
    let Ok(collected) = response.into_body().collect().await else {
        return aws_error(status, "InternalServerException", "", request_id);
    };
    let envelope: Value = serde_json::from_slice(&collected.to_bytes()).unwrap_or_default();
    let message = envelope["error"]["message"].as_str().unwrap_or("");
    let api_type = envelope["error"]["type"].as_str().unwrap_or("");
    let (status, error_type) = aws_error_type(status, api_type);
    aws_error(status, error_type, message, request_id)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn paths_name_the_model_and_the_endpoint() {
        assert_eq!(
            route("/model/anthropic.claude-sonnet-4-5-20250929-v1:0/invoke"),
            Some((
                "anthropic.claude-sonnet-4-5-20250929-v1:0".to_owned(),
                false
            ))
        );
        assert_eq!(
            route("/model/us.anthropic.claude-opus-4-6-v1%3A0/invoke-with-response-stream"),
            Some(("us.anthropic.claude-opus-4-6-v1:0".to_owned(), true))
        );
        // An ARN's `/` travels as `%2F`.
        assert_eq!(
            route("/model/arn:aws:bedrock:us-east-2:1:inference-profile%2Fus.anthropic.x/invoke"),
            Some((
                "arn:aws:bedrock:us-east-2:1:inference-profile/us.anthropic.x".to_owned(),
                false
            ))
        );
        for other in [
            "/model//invoke",
            "/model/a/b/invoke",
            "/model/x/converse",
            "/v1/messages",
        ] {
            assert_eq!(route(other), None, "{other}");
        }
    }

    #[test]
    fn api_errors_become_the_aws_errors_bedrock_answers_with() {
        let cases = [
            (400, "invalid_request_error", 400, "ValidationException"),
            (404, "not_found_error", 404, "ResourceNotFoundException"),
            (429, "rate_limit_error", 429, "ThrottlingException"),
            (529, "overloaded_error", 503, "ServiceUnavailableException"),
            (500, "api_error", 500, "InternalServerException"),
            (413, "request_too_large", 400, "ValidationException"),
        ];
        for (status, api, aws_status, aws) in cases {
            let status = StatusCode::from_u16(status).expect("a status");
            let (s, name) = aws_error_type(status, api);
            assert_eq!((s.as_u16(), name), (aws_status, aws), "{api}");
        }
    }
}
