//! Cache diagnostics in the loop: the user-facing description is on [`CacheDiagnosisReport`].

use threadline_message::{Message, SystemKind};
use threadline_wire::MessagesRequest;
use threadline_wire::diagnostics::{CacheDiagnosis, CacheMissReason, DiagnosticsParam};

use crate::state::State;

// The prediction and its comparison with the API's diagnosis are the cache crate's (where the
// break causes are), so that `inspect`'s analysis uses them without the loop.
pub use threadline_cache::breaks::{Agreement, Prediction};

/// Sees each request the loop sends (after shaping and cache planning) and says where it
/// first diverges from the previous one it saw.
///
/// A closure `FnMut(&MessagesRequest) -> Prediction` is a detector.
pub trait BreakDetector: Send {
    /// Sees `request`, about to be sent.
    fn observe(&mut self, request: &MessagesRequest) -> Prediction;
}

impl<F> BreakDetector for F
where
    F: FnMut(&MessagesRequest) -> Prediction + Send,
{
    fn observe(&mut self, request: &MessagesRequest) -> Prediction {
        self(request)
    }
}

/// Predicts nothing ([`Prediction::Unknown`]): every diagnosis is inconclusive.
#[derive(Debug, Clone, Copy, Default)]
pub struct NoDetector;

impl BreakDetector for NoDetector {
    fn observe(&mut self, _request: &MessagesRequest) -> Prediction {
        Prediction::Unknown
    }
}

/// Cache diagnostics (beta `cache-diagnosis-2026-04-07`) in the loop.
///
/// With [`QueryConfig::with_cache_diagnostics`](crate::QueryConfig::with_cache_diagnostics),
/// every request carries `diagnostics: {previous_message_id}`: `null` on the first request of
/// a session, then the id of the last response (kept in [`State`](crate::State::previous_message_id), so it
/// survives across runs and a journaled state). Each response's `diagnostics` is compared
/// with the loop's own break detection for the same request (a [`BreakDetector`], e.g.
/// `threadline-cache`'s `RequestDivergence` behind a closure), at the level the API reports
/// (model / system / tools / messages), and reported as [`Event::CacheDiagnosis`] and as a
/// `cache_diagnosis` system record in the transcript. A disagreement is what keeps the
/// simulator honest in production: the API saw a change the client did not predict, or the
/// reverse.
///
/// [`Event::CacheDiagnosis`]: crate::Event::CacheDiagnosis
///
/// What [`Event::CacheDiagnosis`](crate::Event::CacheDiagnosis) reports for one response.
#[derive(Debug, Clone, PartialEq)]
#[non_exhaustive]
pub struct CacheDiagnosisReport {
    /// The response's id (`msg_…`).
    pub api_message_id: String,
    /// What the API said.
    pub reason: CacheDiagnosis,
    /// What the loop's own detection said for the same request.
    pub predicted: Prediction,
    /// Whether they agree.
    pub agreement: Agreement,
}

impl CacheDiagnosisReport {
    /// Whether this is not a disagreement (inconclusive counts as agreeing).
    pub fn agrees(&self) -> bool {
        self.agreement != Agreement::Disagrees
    }

    /// The API's reason, when it named one.
    pub fn miss_reason(&self) -> Option<&CacheMissReason> {
        match &self.reason {
            CacheDiagnosis::Miss(reason) => Some(reason),
            _ => None,
        }
    }

    /// The transcript record of this report.
    pub fn record(&self) -> Message {
        Message::system(SystemKind::CacheDiagnosis {
            api_message_id: self.api_message_id.clone(),
            diagnostics: self.reason.to_value().unwrap_or(serde_json::Value::Null),
            predicted: self.predicted.as_record().map(str::to_owned),
            agreement: self.agreement.as_str().to_owned(),
        })
    }
}

/// The loop's side of the feature: asks, predicts, compares.
pub(crate) struct Diagnoser {
    detector: Box<dyn BreakDetector>,
    /// The prediction for the request in flight (set when diagnostics were asked for).
    pending: Option<Prediction>,
}

impl Default for Diagnoser {
    fn default() -> Self {
        Diagnoser {
            detector: Box::new(NoDetector),
            pending: None,
        }
    }
}

impl Diagnoser {
    pub(crate) fn with_detector(detector: Box<dyn BreakDetector>) -> Self {
        Diagnoser {
            detector,
            pending: None,
        }
    }

    /// Puts `diagnostics` on the finished request (when `enabled`) and predicts it.
    pub(crate) fn prepare(&mut self, enabled: bool, st: &State, request: &mut MessagesRequest) {
        self.pending = None;
        if !enabled {
            return;
        }
        request.diagnostics = Some(match &st.previous_message_id {
            Some(id) => DiagnosticsParam::after(id.clone()),
            None => DiagnosticsParam::first(),
        });
        self.pending = Some(self.detector.observe(request));
    }

    /// After a complete response to a prepared request: remembers its id for the next
    /// request and reports its diagnosis (none when the response carries none).
    pub(crate) fn answer(
        &mut self,
        st: &mut State,
        message: &threadline_wire::ResponseMessage,
    ) -> Option<CacheDiagnosisReport> {
        let predicted = self.pending.take()?;
        st.previous_message_id = Some(message.id.clone());
        let reason = message.cache_diagnosis();
        if reason == CacheDiagnosis::Absent {
            return None;
        }
        let agreement = Agreement::of(&reason, predicted);
        Some(CacheDiagnosisReport {
            api_message_id: message.id.clone(),
            reason,
            predicted,
            agreement,
        })
    }
}
