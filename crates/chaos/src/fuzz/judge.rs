//! The verdict on a Schemathesis run: its figures, and checks on completion, coverage, server
//! errors, error bodies and each of Schemathesis' own checks.

use std::process::ExitStatus;

use serde_json::Value;

use super::findings::Findings;
use crate::scenario::{Scenario, say, shorten};

/// Records the run's outcome: completion, coverage, server errors, error bodies, and each check.
pub fn judge(s: &mut Scenario, report: &Value, found: &Findings, exit: ExitStatus) {
    let count = |pointer: &str| report.pointer(pointer).and_then(Value::as_u64).unwrap_or(0);
    let selected = count("/operations/selected");
    let tested = count("/operations/tested");
    let generated = count("/test_cases/generated");
    s.figure("operations tested", format!("{tested} of {selected}"));
    s.figure("test cases generated", generated);
    s.figure(
        "requests with a response",
        found.requests - found.unanswered,
    );
    s.figure(
        "responses by status",
        found
            .statuses
            .iter()
            .map(|(status, n)| format!("{status}: {n}"))
            .collect::<Vec<_>>()
            .join(", "),
    );
    s.figure("server errors (5xx)", found.server_errors.0);
    s.figure(
        "unique failures (schemathesis' own count)",
        count("/test_cases/unique_failures"),
    );
    for failure in report["failures"].as_array().into_iter().flatten() {
        s.figure(
            format!(
                "{} {}",
                failure["code"].as_str().unwrap_or("?"),
                failure["title"].as_str().unwrap_or("?")
            ),
            format!(
                "{} unique, on {} operations",
                failure["count"],
                failure["operations"].as_array().map_or(0, Vec::len)
            ),
        );
    }
    for (check, (passed, failed)) in &found.runs {
        s.figure(
            format!("check {check}"),
            format!("{failed} failed of {}", passed + failed),
        );
    }
    s.figure(
        "valid-by-schema requests refused by a rule no schema can state (not counted as failures)",
        if found.unstatable.is_empty() {
            "none".to_owned()
        } else {
            found
                .unstatable
                .iter()
                .map(|(rule, n)| format!("{n} × \"{rule}\""))
                .collect::<Vec<_>>()
                .join(", ")
        },
    );

    let complete = report["complete"].as_bool() == Some(true);
    let stop = report["stop_reason"].as_str().unwrap_or("?");
    let errors = report["errors"].as_array().cloned().unwrap_or_default();
    // Exit 1 means "failures found", which the checks below report one by one.
    s.check(
        "schemathesis ran to completion without errors",
        complete && stop == "completed" && errors.is_empty() && matches!(exit.code(), Some(0 | 1)),
        format!(
            "exit code {}, stop reason {stop}, {} errors{}",
            exit.code()
                .map_or_else(|| exit.to_string(), |c| c.to_string()),
            errors.len(),
            errors
                .first()
                .map(|e| format!(", e.g. {}", shorten(&e.to_string(), 300)))
                .unwrap_or_default()
        ),
    );
    s.check(
        "every operation of the OpenAPI description was tested",
        selected > 0 && tested == selected,
        format!("{tested} of {selected}, {generated} test cases"),
    );
    s.check(
        "no server errors (5xx) from fuzzed requests",
        found.server_errors.0 == 0
            && found
                .runs
                .get("not_a_server_error")
                .is_some_and(|r| r.1 == 0),
        format!(
            "{} of {} responses{}",
            found.server_errors.0,
            found.requests - found.unanswered,
            examples_text(&found.server_errors.1)
        ),
    );
    s.check(
        "every fuzzed request got a response",
        found.unanswered == 0,
        format!(
            "{} of {} without a response",
            found.unanswered, found.requests
        ),
    );
    s.check(
        "every error response is JSON {\"error\": string}",
        found.error_responses > 0 && found.non_json_errors.0 == 0,
        format!(
            "{} of {} error responses are not{}",
            found.non_json_errors.0,
            found.error_responses,
            examples_text(&found.non_json_errors.1)
        ),
    );
    for check in ["content_type_conformance", "response_schema_conformance"] {
        let on_errors = found.on_errors.get(check).copied().unwrap_or(0);
        s.check(
            format!("{check} ran on the error responses"),
            on_errors > 0,
            format!(
                "on {on_errors} error responses, {} runs in all",
                found.runs.get(check).map_or(0, |r| r.0 + r.1)
            ),
        );
    }

    for (check, (passed, failed)) in &found.runs {
        let seen = if *failed == 0 {
            format!("passed {passed} times")
        } else {
            let operations = found.examples.get(check).cloned().unwrap_or_default();
            for (operation, example) in &operations {
                say(&format!("    {check} on {operation}: {example}"));
            }
            let example = operations
                .iter()
                .next()
                .map(|(operation, e)| format!("; e.g. {operation}: {e}"))
                .unwrap_or_default();
            format!(
                "{failed} of {} runs failed, on {} operations ({}){example}",
                passed + failed,
                operations.len(),
                shorten(
                    &operations.keys().cloned().collect::<Vec<_>>().join(", "),
                    300
                ),
            )
        };
        s.check(format!("schemathesis check {check}"), *failed == 0, seen);
    }
}

/// `; e.g. A | B` for a few examples, or nothing.
fn examples_text(examples: &[String]) -> String {
    if examples.is_empty() {
        String::new()
    } else {
        format!("; e.g. {}", examples.join(" | "))
    }
}
