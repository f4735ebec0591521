//! The reports as CSV (`docs/billing.md`, CSV exports): the encoder (cells a spreadsheet will not
//! run, RFC 4180 rows by the `csv` crate), the response's headers, the summary's rows, and the
//! detailed report streamed page by page, so a year of entries never sits in memory.

use actix_web::HttpResponse;
use actix_web::http::header;
use timetrack_domain::model::rate::major_units;
use timetrack_domain::model::{Cursor, DetailedRow, Figures, Named, Principal, SummaryGroup};
use timetrack_domain::services::{ReportScope, Visibility};
use timetrack_domain::timefmt::{iso_date, rfc3339};
use timetrack_domain::{DomainError, DomainResult};

use crate::error::ApiError;
use crate::state::AppState;

/// A text cell as a spreadsheet must not run it: one starting with `=`, `+`, `-`, `@`, a tab or
/// a carriage return is prefixed with `'`.
pub(super) fn text_cell(value: &str) -> String {
    match value.chars().next() {
        Some('=' | '+' | '-' | '@' | '\t' | '\r') => format!("'{value}"),
        _ => value.to_owned(),
    }
}

pub(super) fn csv_bytes(rows: &[Vec<String>]) -> Result<Vec<u8>, ApiError> {
    let mut writer = csv::Writer::from_writer(Vec::new());
    for row in rows {
        writer
            .write_record(row)
            .map_err(|e| ApiError::from(DomainError::Unexpected(e.into())))?;
    }
    writer
        .into_inner()
        .map_err(|e| ApiError::from(DomainError::Unexpected(anyhow::anyhow!("{e}"))))
}

pub(super) fn csv_response(name: &str, scope: &ReportScope) -> actix_web::HttpResponseBuilder {
    let mut response = HttpResponse::Ok();
    response
        .content_type("text/csv; charset=utf-8")
        .insert_header((
            header::CONTENT_DISPOSITION,
            format!(
                "attachment; filename=\"{name}-{}-{}.csv\"",
                iso_date(scope.filter.from),
                iso_date(scope.filter.to)
            ),
        ));
    response
}

pub(super) fn detailed_header(v: Visibility) -> Vec<String> {
    let mut header: Vec<&str> = vec![
        "id",
        "date",
        "start",
        "end",
        "seconds",
        "rounded_seconds",
        "description",
        "billable",
        "user_id",
        "user_name",
        "client_id",
        "client_name",
        "project_id",
        "project_name",
        "task_id",
        "task_name",
        "tags",
        "currency",
    ];
    if v.billable {
        header.extend(["billable_rate", "billable_amount"]);
    }
    if v.cost {
        header.extend(["cost_rate", "cost_amount"]);
    }
    header.into_iter().map(str::to_owned).collect()
}

pub(super) fn detailed_cells(r: &DetailedRow, v: Visibility) -> Vec<String> {
    let id_of = |n: &Option<Named>| n.as_ref().map(|n| n.id.clone()).unwrap_or_default();
    let name_of = |n: &Option<Named>| n.as_ref().map(|n| text_cell(&n.name)).unwrap_or_default();
    let money = |minor: Option<i64>| {
        minor
            .map(|m| major_units(m, &r.currency))
            .unwrap_or_default()
    };
    let mut cells = vec![
        r.id.to_string(),
        iso_date(r.date),
        rfc3339(r.start),
        rfc3339(r.end),
        r.seconds.to_string(),
        r.rounded_seconds.to_string(),
        text_cell(&r.description),
        r.billable.to_string(),
        r.user.id.clone(),
        text_cell(&r.user.name),
        id_of(&r.client),
        name_of(&r.client),
        id_of(&r.project),
        name_of(&r.project),
        id_of(&r.task),
        name_of(&r.task),
        text_cell(
            &r.tags
                .iter()
                .map(|t| t.name.as_str())
                .collect::<Vec<_>>()
                .join(", "),
        ),
        r.currency.clone(),
    ];
    if v.billable {
        cells.push(money(r.billable_rate_minor));
        cells.push(major_units(r.billable_amount_minor, &r.currency));
    }
    if v.cost {
        cells.push(money(r.cost_rate_minor));
        cells.push(major_units(r.cost_amount_minor, &r.currency));
    }
    cells
}

/// The rows of a detailed CSV are read this many at a time.
pub(super) const CSV_PAGE: u32 = 5000;

pub(super) fn summary_csv(
    groups: &[SummaryGroup],
    totals: &Figures,
    depth: usize,
    v: Visibility,
) -> Vec<Vec<String>> {
    let mut header: Vec<String> = vec!["level".into()];
    for i in 1..=depth {
        header.push(format!("group_{i}"));
        header.push(format!("key_{i}"));
    }
    header.extend(
        [
            "seconds",
            "billable_seconds",
            "rounded_seconds",
            "entries",
            "currency",
        ]
        .map(str::to_owned),
    );
    if v.billable {
        header.push("billable_amount".into());
    }
    if v.cost {
        header.push("cost_amount".into());
    }
    let mut rows = vec![header];
    fn push(
        rows: &mut Vec<Vec<String>>,
        path: &[(String, String)],
        figures: &Figures,
        depth: usize,
        v: Visibility,
    ) {
        let mut base = vec![path.len().to_string()];
        for i in 0..depth {
            let (label, key) = path.get(i).cloned().unwrap_or_default();
            base.push(text_cell(&label));
            base.push(key);
        }
        base.extend([
            figures.seconds.to_string(),
            figures.billable_seconds.to_string(),
            figures.rounded_seconds.to_string(),
            figures.entries.to_string(),
        ]);
        if figures.amounts.is_empty() || !v.billable {
            let mut row = base.clone();
            row.push(
                figures
                    .amounts
                    .first()
                    .map(|a| a.currency.clone())
                    .unwrap_or_default(),
            );
            if v.billable {
                row.push(String::new());
            }
            if v.cost {
                row.push(String::new());
            }
            rows.push(row);
            return;
        }
        // One row per currency: the durations repeat, the money never mixes.
        for amount in &figures.amounts {
            let mut row = base.clone();
            row.push(amount.currency.clone());
            row.push(major_units(amount.billable_minor, &amount.currency));
            if v.cost {
                row.push(major_units(amount.cost_minor, &amount.currency));
            }
            rows.push(row);
        }
    }
    fn walk(
        rows: &mut Vec<Vec<String>>,
        path: &mut Vec<(String, String)>,
        groups: &[SummaryGroup],
        depth: usize,
        v: Visibility,
    ) {
        for group in groups {
            path.push((
                group.value.label.clone(),
                group.value.key.clone().unwrap_or_default(),
            ));
            push(rows, path, &group.figures, depth, v);
            walk(rows, path, &group.groups, depth, v);
            path.pop();
        }
    }
    push(&mut rows, &[], totals, depth, v);
    walk(&mut rows, &mut Vec::new(), groups, depth, v);
    rows
}

// ---------------------------------------------------------------------------------------------
// Handlers

/// The detailed CSV, [`CSV_PAGE`] rows at a time: the header first, then page after page until
/// the last. Each page is written out as CSV on a blocking thread while the next page's query is
/// already sent, so the database and the CSV writer work at once; at most two pages are held. A
/// failure midway is logged and breaks the body off before the chunked encoding's last chunk, so
/// a client sees an incomplete download rather than a short file that looks whole.
pub(super) fn detailed_stream(
    state: std::sync::Arc<AppState>,
    caller: Principal,
    scope: ReportScope,
) -> impl futures_util::Stream<Item = Result<bytes::Bytes, actix_web::Error>> {
    type Fetched = tokio::task::JoinHandle<DomainResult<(Vec<DetailedRow>, Option<Cursor>)>>;
    enum Step {
        Header,
        Page(Fetched),
        Done,
    }
    let v = scope.visibility;
    let fetch = move |after: Option<Cursor>| -> Fetched {
        let (state, scope) = (state.clone(), scope.clone());
        tokio::spawn(async move {
            state
                .reports
                .detailed(&caller, &scope, after, CSV_PAGE)
                .await
        })
    };
    futures_util::stream::unfold(Step::Header, move |step| {
        let fetch = fetch.clone();
        async move {
            let stopped = |e: &dyn std::fmt::Display| {
                tracing::error!(error = %e, "the detailed CSV stopped early");
                let cut = actix_web::error::ErrorInternalServerError("the detailed CSV stopped");
                Some((Err(cut), Step::Done))
            };
            match step {
                Step::Done => None,
                Step::Header => match csv_bytes(&[detailed_header(v)]) {
                    Ok(bytes) => Some((Ok(bytes::Bytes::from(bytes)), Step::Page(fetch(None)))),
                    Err(e) => stopped(&e),
                },
                Step::Page(fetched) => {
                    let (rows, next) = match fetched.await {
                        Ok(Ok(page)) => page,
                        Ok(Err(e)) => return stopped(&e),
                        Err(e) => return stopped(&e),
                    };
                    let step = next.map_or(Step::Done, |cursor| Step::Page(fetch(Some(cursor))));
                    let written = tokio::task::spawn_blocking(move || {
                        let cells: Vec<Vec<String>> =
                            rows.iter().map(|r| detailed_cells(r, v)).collect();
                        csv_bytes(&cells)
                    })
                    .await;
                    match written {
                        Ok(Ok(bytes)) => Some((Ok(bytes::Bytes::from(bytes)), step)),
                        Ok(Err(e)) => stopped(&e),
                        Err(e) => stopped(&e),
                    }
                }
            }
        }
    })
}
