//! The collector's phases and isolation.

use std::sync::Arc;
use std::sync::atomic::{AtomicBool, Ordering};
use std::time::Duration;

use threadline_attach::{
    Collector, Failure, Phase, Source, SourceContext, SourceError, SourceFuture, SourceOutput,
    Thread, Turn,
};
use threadline_message::Attachment;

fn reminder(text: &str) -> Attachment {
    Attachment::Reminder { text: text.into() }
}

/// A phase-1 source that attaches one reminder after `delay`.
struct Input {
    text: &'static str,
    delay: Duration,
}

impl Source for Input {
    fn name(&self) -> &str {
        self.text
    }
    fn phase(&self) -> Phase {
        Phase::UserInput
    }
    fn collect<'a>(&'a self, _cx: &'a SourceContext<'a>) -> SourceFuture<'a> {
        Box::pin(async move {
            tokio::time::sleep(self.delay).await;
            Ok(SourceOutput::attachments(vec![reminder(self.text)]))
        })
    }
}

/// A phase-2 source that attaches what phase 1 found, as it saw it.
struct Echo;

impl Source for Echo {
    fn name(&self) -> &str {
        "echo"
    }
    fn phase(&self) -> Phase {
        Phase::Environment
    }
    fn collect<'a>(&'a self, cx: &'a SourceContext<'a>) -> SourceFuture<'a> {
        Box::pin(async move {
            let seen: Vec<String> = cx
                .found
                .iter()
                .map(|a| match a {
                    Attachment::Reminder { text } => text.clone(),
                    other => format!("{other:?}"),
                })
                .collect();
            Ok(SourceOutput::attachments(vec![reminder(&format!(
                "phase 2 saw: {}",
                seen.join(", ")
            ))]))
        })
    }
}

/// A source that does something bad.
enum Bad {
    PanicsWhilePolled,
    PanicsWhenCalled,
    Errors,
    Sleeps(Duration),
}

impl Source for Bad {
    fn name(&self) -> &str {
        match self {
            Bad::PanicsWhilePolled => "panics_while_polled",
            Bad::PanicsWhenCalled => "panics_when_called",
            Bad::Errors => "errors",
            Bad::Sleeps(_) => "sleeps",
        }
    }
    fn phase(&self) -> Phase {
        Phase::Environment
    }
    fn collect<'a>(&'a self, _cx: &'a SourceContext<'a>) -> SourceFuture<'a> {
        match self {
            Bad::PanicsWhenCalled => panic!("broken before the future"),
            Bad::PanicsWhilePolled => Box::pin(async move {
                tokio::task::yield_now().await;
                panic!("broken source");
            }),
            Bad::Errors => Box::pin(async move { Err(SourceError::failed("no such server")) }),
            Bad::Sleeps(d) => {
                let d = *d;
                Box::pin(async move {
                    tokio::time::sleep(d).await;
                    Ok(SourceOutput::attachments(vec![reminder("too late")]))
                })
            }
        }
    }
}

/// A phase-3 source that records whether it ran.
struct MainOnly(Arc<AtomicBool>);

impl Source for MainOnly {
    fn name(&self) -> &str {
        "main_only"
    }
    fn phase(&self) -> Phase {
        Phase::MainThread
    }
    fn collect<'a>(&'a self, _cx: &'a SourceContext<'a>) -> SourceFuture<'a> {
        Box::pin(async move {
            self.0.store(true, Ordering::SeqCst);
            Ok(SourceOutput::attachments(vec![reminder("ide selection")]))
        })
    }
}

fn texts(attachments: &[Attachment]) -> Vec<String> {
    attachments
        .iter()
        .map(|a| match a {
            Attachment::Reminder { text } => text.clone(),
            other => format!("{other:?}"),
        })
        .collect()
}

#[tokio::test(flavor = "current_thread", start_paused = true)]
async fn phase_two_sees_every_phase_one_result_and_order_is_registration_order() {
    // The slow phase-1 source finishes last; phase 2 must still see it, and the output is in
    // the order the sources were added, not the order they finished.
    let collector = Collector::new()
        .with(Echo)
        .with(Input {
            text: "slow mention",
            delay: Duration::from_millis(900),
        })
        .with(Input {
            text: "fast mention",
            delay: Duration::from_millis(1),
        });
    let collected = collector.collect(&Turn::new(&[])).await;
    assert_eq!(
        texts(&collected.attachments),
        [
            "slow mention",
            "fast mention",
            "phase 2 saw: slow mention, fast mention"
        ]
    );
    assert!(collected.report.is_empty(), "{:?}", collected.report);
}

#[tokio::test(flavor = "current_thread", start_paused = true)]
async fn failing_sources_add_nothing_are_reported_and_leave_the_others_intact() {
    let collector = Collector::new()
        .with(Bad::PanicsWhilePolled)
        .with(Input {
            text: "mention",
            delay: Duration::ZERO,
        })
        .with(Bad::Errors)
        .with(Bad::Sleeps(Duration::from_secs(5)))
        .with(Bad::PanicsWhenCalled)
        .with(Echo)
        .with(MainOnly(Arc::new(AtomicBool::new(false))));
    let collected = collector.collect(&Turn::new(&[])).await;

    assert_eq!(
        texts(&collected.attachments),
        ["mention", "phase 2 saw: mention", "ide selection"]
    );
    let failures: Vec<(&str, String)> = collected
        .report
        .iter()
        .map(|e| {
            (
                e.source_name.as_str(),
                e.failure().map(ToString::to_string).unwrap_or_default(),
            )
        })
        .collect();
    assert_eq!(
        failures,
        [
            ("panics_while_polled", "panicked: broken source".to_owned()),
            ("errors", "failed: no such server".to_owned()),
            ("sleeps", "timed out after 1000 ms".to_owned()),
            (
                "panics_when_called",
                "panicked: broken before the future".to_owned()
            ),
        ]
    );
    assert!(collected.report[0].failure().is_some_and(Failure::is_panic));
    assert!(
        collected.report[2]
            .failure()
            .is_some_and(Failure::is_timeout)
    );
    assert_eq!(
        collected.report[2].to_string(),
        "attachment source `sleeps`: timed out after 1000 ms"
    );
}

/// A source with a timeout of its own.
struct Patient;

impl Source for Patient {
    fn name(&self) -> &str {
        "patient"
    }
    fn phase(&self) -> Phase {
        Phase::Environment
    }
    fn timeout(&self) -> Option<Duration> {
        Some(Duration::from_secs(10))
    }
    fn collect<'a>(&'a self, _cx: &'a SourceContext<'a>) -> SourceFuture<'a> {
        Box::pin(async move {
            tokio::time::sleep(Duration::from_secs(5)).await;
            Ok(SourceOutput::attachments(vec![reminder("worth the wait")]))
        })
    }
}

#[tokio::test(flavor = "current_thread", start_paused = true)]
async fn a_source_may_ask_for_its_own_timeout_and_the_default_can_change() {
    let collected = Collector::new()
        .with(Patient)
        .with(Bad::Sleeps(Duration::from_millis(300)))
        .with_timeout(Duration::from_millis(200))
        .collect(&Turn::new(&[]))
        .await;
    assert_eq!(texts(&collected.attachments), ["worth the wait"]);
    assert_eq!(
        collected.report[0].to_string(),
        "attachment source `sleeps`: timed out after 200 ms"
    );
}

#[tokio::test(flavor = "current_thread", start_paused = true)]
async fn main_thread_sources_are_skipped_for_sub_agents() {
    let ran = Arc::new(AtomicBool::new(false));
    let collector = Collector::new().with(MainOnly(ran.clone())).with(Echo);
    let history = [];
    let sub = Turn::new(&history).with_thread(Thread::SubAgent);
    let collected = collector.collect(&sub).await;
    assert_eq!(texts(&collected.attachments), ["phase 2 saw: "]);
    assert!(!ran.load(Ordering::SeqCst));

    let collected = collector.collect(&Turn::new(&history)).await;
    assert_eq!(
        texts(&collected.attachments),
        ["phase 2 saw: ", "ide selection"]
    );
    assert!(ran.load(Ordering::SeqCst));
}

#[test]
fn collect_blocking_brings_its_own_runtime() {
    let collected = Collector::new()
        .with(Input {
            text: "mention",
            delay: Duration::from_millis(1),
        })
        .with(Bad::Sleeps(Duration::from_secs(30)))
        .with_timeout(Duration::from_millis(50))
        .collect_blocking(&Turn::new(&[]))
        .expect("a runtime");
    assert_eq!(texts(&collected.attachments), ["mention"]);
    assert!(
        collected.report[0]
            .failure()
            .is_some_and(Failure::is_timeout)
    );
}
