//! Cache diagnostics in the loop: the user-facing description is on [`CacheDiagnosisReport`].

use threadline_message::{Message, SystemKind};
use threadline_wire::MessagesRequest;
use threadline_wire::diagnostics::{CacheDiagnosis, CacheMissReason, DiagnosticsParam, PromptPart};

use crate::state::State;

/// The loop's own view of where a request diverges from the previous one.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
#[non_exhaustive]
pub enum Prediction {
    /// Nothing to compare with: no detector, or the first request it saw.
    Unknown,
    /// The request repeats the previous one (it may append to it).
    NoDivergence,
    /// The request first diverges in this part.
    Changed(PromptPart),
}

impl Prediction {
    /// As the transcript records it: `None` for `Unknown`, `none`, or the part's name.
    pub fn as_record(self) -> Option<&'static str> {
        match self {
            Prediction::Unknown => None,
            Prediction::NoDivergence => Some("none"),
            Prediction::Changed(part) => Some(part.as_str()),
        }
    }
}

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

/// Whether the API's diagnosis and the loop's prediction agree.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
#[non_exhaustive]
pub enum Agreement {
    /// Both name the same part, or both saw no divergence.
    Agrees,
    /// They differ: the API names another part, or a change the loop did not see, or none
    /// where the loop saw one.
    Disagrees,
    /// Nothing to compare: pending, `unavailable`, `previous_message_not_found`, a reason
    /// this version does not know, or no prediction.
    Inconclusive,
}

impl Agreement {
    /// Compares a response's diagnosis with the loop's prediction for its request.
    pub fn of(reason: &CacheDiagnosis, predicted: Prediction) -> Agreement {
        if predicted == Prediction::Unknown {
            return Agreement::Inconclusive;
        }
        let api = match reason {
            CacheDiagnosis::NoDivergence => Prediction::NoDivergence,
            CacheDiagnosis::Miss(reason) => match reason.part() {
                Some(part) => Prediction::Changed(part),
                None => return Agreement::Inconclusive,
            },
            _ => return Agreement::Inconclusive,
        };
        if api == predicted {
            Agreement::Agrees
        } else {
            Agreement::Disagrees
        }
    }

    /// `agrees`, `disagrees` or `inconclusive`.
    pub fn as_str(self) -> &'static str {
        match self {
            Agreement::Agrees => "agrees",
            Agreement::Disagrees => "disagrees",
            Agreement::Inconclusive => "inconclusive",
        }
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

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn pending_unavailable_and_unknown_are_never_disagreements() {
        let system = Prediction::Changed(PromptPart::System);
        let miss = |kind| CacheDiagnosis::Miss(CacheMissReason::changed(kind, Some(1)));
        assert_eq!(
            Agreement::of(&miss("system_changed"), system),
            Agreement::Agrees
        );
        assert_eq!(
            Agreement::of(&miss("tools_changed"), system),
            Agreement::Disagrees
        );
        assert_eq!(
            Agreement::of(&CacheDiagnosis::NoDivergence, Prediction::NoDivergence),
            Agreement::Agrees
        );
        assert_eq!(
            Agreement::of(&CacheDiagnosis::NoDivergence, system),
            Agreement::Disagrees
        );
        assert_eq!(
            Agreement::of(&miss("messages_changed"), Prediction::NoDivergence),
            Agreement::Disagrees
        );
        for reason in [
            CacheDiagnosis::Pending,
            CacheDiagnosis::Absent,
            CacheDiagnosis::Miss(CacheMissReason::unavailable()),
            CacheDiagnosis::Miss(CacheMissReason::previous_message_not_found()),
            miss("weather_changed"),
        ] {
            assert_eq!(Agreement::of(&reason, system), Agreement::Inconclusive);
        }
        assert_eq!(
            Agreement::of(&miss("system_changed"), Prediction::Unknown),
            Agreement::Inconclusive
        );
    }
}
