//! Google Vertex AI's front (docs/platforms.md §2):
//! `POST /v1/projects/{project}/locations/{region}/publishers/anthropic/models/{model}:rawPredict`
//! (`:streamRawPredict` to stream, `count-tokens:rawPredict` to count) with a Google OAuth
//! bearer token; the body without `model` (the path says it, but for a token count) and with
//! `anthropic_version: "vertex-2023-10-16"`; the betas in the `anthropic-beta` header; streams
//! as the API's SSE. A missing token or an unknown model is answered in Google's error
//! envelope, everything else as the API answers.

use http::{HeaderValue, Response, StatusCode};
use serde_json::{Map, Value};
use threadline_wire::model::ModelTable;

use super::{Admitted, Refusal};
use crate::server::{MockBody, full};

pub use threadline_wire::platform::VERTEX_ANTHROPIC_VERSION;

/// What a Vertex path names.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) struct Target {
    pub(crate) project: String,
    pub(crate) region: String,
    /// The model id, `None` for a token count (its body names the model).
    pub(crate) model: Option<String>,
    /// `:streamRawPredict`.
    pub(crate) stream: bool,
}

/// The target of a Vertex path, if it is one.
pub(crate) fn route(path: &str) -> Option<Target> {
    let rest = path.strip_prefix("/v1/projects/")?;
    let (project, rest) = rest.split_once("/locations/")?;
    let (region, rest) = rest.split_once("/publishers/anthropic/models/")?;
    let (model, method) = rest.rsplit_once(':')?;
    let plain = |s: &str| !s.is_empty() && !s.contains('/');
    if !plain(project) || !plain(region) || !plain(model) {
        return None;
    }
    let (model, stream) = match (model, method) {
        ("count-tokens", "rawPredict") => (None, false),
        (model, "rawPredict") => (Some(model.to_owned()), false),
        (model, "streamRawPredict") => (Some(model.to_owned()), true),
        _ => return None,
    };
    Some(Target {
        project: project.to_owned(),
        region: region.to_owned(),
        model,
        stream,
    })
}

/// Google's error envelope.
pub(crate) fn google_error(
    status: StatusCode,
    google_status: &str,
    message: &str,
) -> Response<MockBody> {
    let body = serde_json::to_vec(&serde_json::json!({
        "error": { "code": status.as_u16(), "message": message, "status": google_status }
    }))
    .expect("a JSON object serializes");
    let mut response = Response::new(full(body));
    *response.status_mut() = status;
    response.headers_mut().insert(
        "content-type",
        HeaderValue::from_static("application/json; charset=UTF-8"),
    );
    response
}

fn refusal(status: StatusCode, google_status: &str, message: String) -> Refusal {
    Refusal {
        response: Box::new(google_error(status, google_status, &message)),
        message,
    }
}

/// Admits a Vertex request as Vertex does, into the canonical request.
pub(crate) fn admit(
    models: &ModelTable,
    target: &Target,
    (authenticated, beta): (bool, &str),
    body: &[u8],
    request_id: &str,
) -> Result<Admitted, Refusal> {
    if !authenticated {
        return Err(refusal(
            StatusCode::UNAUTHORIZED,
            "UNAUTHENTICATED",
            "Request had invalid authentication credentials. Expected OAuth 2 access token, \
             login cookie or other valid authentication credential."
                .to_owned(),
        ));
    }
    let invalid = |message: &str| Refusal {
        response: Box::new(crate::server::api_error(
            threadline_wire::ApiErrorType::InvalidRequest,
            message,
            request_id,
        )),
        message: message.to_owned(),
    };
    let Ok(Value::Object(mut fields)) = serde_json::from_slice::<Value>(body) else {
        return Err(invalid(
            "There was an error parsing the body of your request",
        ));
    };
    match fields.remove("anthropic_version") {
        Some(Value::String(v)) if super::accepted_version(&v, VERTEX_ANTHROPIC_VERSION) => {}
        Some(_) => {
            return Err(invalid(
                "anthropic_version: Input should be 'vertex-2023-10-16'",
            ));
        }
        None => return Err(invalid("anthropic_version: Field required")),
    }
    // The model: the path's, or a token count's body's.
    let named = match &target.model {
        Some(model) => model.clone(),
        None => fields
            .get("model")
            .and_then(Value::as_str)
            .unwrap_or("")
            .to_owned(),
    };
    let Some(canonical) = models.get(&named).map(|row| row.id.clone()) else {
        return Err(refusal(
            StatusCode::NOT_FOUND,
            "NOT_FOUND",
            format!(
                "Publisher Model `projects/{}/locations/{}/publishers/anthropic/models/{named}` \
                 not found.",
                target.project, target.region
            ),
        ));
    };
    let mut request = Map::with_capacity(fields.len() + 1);
    fields.remove("model");
    request.insert("model".to_owned(), Value::String(canonical));
    request.extend(fields);
    if target.stream {
        request.insert("stream".to_owned(), Value::Bool(true));
    }
    Ok(Admitted {
        body: serde_json::to_vec(&Value::Object(request)).expect("JSON serializes"),
        // Vertex passes the `anthropic-beta` header through (docs/platforms.md §2.2).
        beta: beta.to_owned(),
        count_tokens: target.model.is_none(),
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn paths_name_the_project_region_model_and_method() {
        let path = "/v1/projects/p-1/locations/us-east5/publishers/anthropic/models/claude-sonnet-4-5@20250929:streamRawPredict";
        let target = route(path).expect("a Vertex path");
        assert_eq!(target.project, "p-1");
        assert_eq!(target.region, "us-east5");
        assert_eq!(target.model.as_deref(), Some("claude-sonnet-4-5@20250929"));
        assert!(target.stream);
        let count =
            "/v1/projects/p/locations/global/publishers/anthropic/models/count-tokens:rawPredict";
        assert_eq!(route(count).expect("a count").model, None);
        for other in [
            "/v1/projects/p/locations/r/publishers/anthropic/models/m:predict",
            "/v1/projects/p/locations/r/publishers/google/models/m:rawPredict",
            "/v1/projects//locations/r/publishers/anthropic/models/m:rawPredict",
        ] {
            assert_eq!(route(other), None, "{other}");
        }
    }
}
