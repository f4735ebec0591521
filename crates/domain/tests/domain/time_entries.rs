use serde_json::Value;
use time::Duration;
use time::macros::datetime;
use timetrack_domain::model::Role;

use timetrack_domain::model::EventType;
use timetrack_domain::payload::EntryAction;
use timetrack_domain::services::time_entries::*;
use timetrack_domain::{DomainError, ids::*, model::*, payload, ports::*, timefmt};
use timetrack_testkit::fakes::{TestWorld, name, run_ready};

fn setup() -> (TestWorld, Principal) {
    let world = TestWorld::new();
    let (ws, user) = world.workspace_with_user();
    let (key, _) = run_ready(world.admin.create_api_key(user.id, ws.id, None)).unwrap();
    (world, key.principal(Role::Owner))
}

fn bodies(world: &TestWorld) -> Vec<(EventType, Value)> {
    world
        .store
        .events()
        .into_iter()
        .map(|e| (e.event_type, serde_json::from_str(&e.body).unwrap()))
        .collect()
}

#[test]
fn start_truncates_to_the_second_and_records_timer_started() {
    let (world, caller) = setup();
    world.clock.advance(Duration::milliseconds(1500));
    let entry = run_ready(world.entries.start(&caller, EntryDraft::default())).unwrap();
    assert_eq!(entry.start, datetime!(2026-01-05 09:00:01 UTC));
    assert!(entry.is_running());
    let events = bodies(&world);
    assert_eq!(events.len(), 1);
    assert_eq!(events[0].0, EventType::TimerStarted);
    assert_eq!(events[0].1["action"], "start_timer");
    assert!(events[0].1.get("endTime").is_none());
}

#[test]
fn starting_while_running_stops_the_running_timer_first() {
    let (world, caller) = setup();
    let first = run_ready(world.entries.start(&caller, EntryDraft::default())).unwrap();
    world.clock.advance(Duration::seconds(90));
    let second = run_ready(world.entries.start(&caller, EntryDraft::default())).unwrap();
    let events = bodies(&world);
    let kinds: Vec<EventType> = events.iter().map(|(k, _)| *k).collect();
    assert_eq!(
        kinds,
        [
            EventType::TimerStarted,
            EventType::TimerStopped,
            EventType::TimerStarted
        ]
    );
    assert_eq!(events[1].1["id"], first.id.to_string());
    assert_eq!(events[1].1["duration"], 90);
    assert_eq!(events[2].1["id"], second.id.to_string());
    assert_eq!(
        run_ready(world.entries.current(&caller))
            .unwrap()
            .unwrap()
            .id,
        second.id
    );
}

#[test]
fn stop_ends_the_running_timer_and_a_second_stop_is_no_running_timer() {
    let (world, caller) = setup();
    run_ready(world.entries.start(&caller, EntryDraft::default())).unwrap();
    world.clock.advance(Duration::seconds(61));
    let stopped = run_ready(world.entries.stop(&caller)).unwrap();
    assert_eq!(stopped.duration_seconds(), Some(61));
    assert_eq!(run_ready(world.entries.current(&caller)).unwrap(), None);
    let err = run_ready(world.entries.stop(&caller)).unwrap_err();
    assert!(
        matches!(&err, DomainError::Conflict(m) if m == NO_RUNNING_TIMER),
        "{err:?}"
    );
    let (kind, body) = bodies(&world).pop().unwrap();
    assert_eq!(kind, EventType::TimerStopped);
    assert_eq!(body["updatedAt"], timefmt::rfc3339(world.clock.now()));
}

#[test]
fn manual_entries_need_end_after_start_and_record_time_entry_created() {
    let (world, caller) = setup();
    let start = datetime!(2026-01-04 10:00:00.7 UTC);
    let err = run_ready(
        world
            .entries
            .create_manual(&caller, EntryDraft::default(), start, start),
    )
    .unwrap_err();
    assert!(matches!(err, DomainError::Validation(_)));
    // Truncation can make them equal too.
    let err = run_ready(world.entries.create_manual(
        &caller,
        EntryDraft::default(),
        start,
        datetime!(2026-01-04 10:00:00.9 UTC),
    ))
    .unwrap_err();
    assert!(matches!(err, DomainError::Validation(_)));
    assert!(world.store.events().is_empty());
    let entry = run_ready(world.entries.create_manual(
        &caller,
        EntryDraft {
            billable: Some(true),
            ..EntryDraft::default()
        },
        start,
        start + Duration::hours(2),
    ))
    .unwrap();
    assert_eq!(entry.duration_seconds(), Some(7200));
    let (kind, body) = bodies(&world).pop().unwrap();
    assert_eq!(kind, EventType::TimeEntryCreated);
    assert_eq!(body["action"], "manual_entry");
    assert_eq!(body["duration"], 7200);
    assert_eq!(body["billable"], true);
}

#[test]
fn references_must_be_the_workspaces_and_consistent() {
    let (world, caller) = setup();
    let project = run_ready(world.catalog.create_project(&caller, name("Site"), None)).unwrap();
    let other = run_ready(world.catalog.create_project(&caller, name("Other"), None)).unwrap();
    let task = run_ready(
        world
            .catalog
            .create_task(&caller, project.id, name("Design")),
    )
    .unwrap();
    let tag = run_ready(world.catalog.create_tag(&caller, name("urgent"))).unwrap();
    let bad = [
        EntryDraft {
            project_id: Some(ProjectId(uuid::Uuid::from_u128(999))),
            ..EntryDraft::default()
        },
        EntryDraft {
            task_id: Some(TaskId(uuid::Uuid::from_u128(999))),
            ..EntryDraft::default()
        },
        EntryDraft {
            project_id: Some(other.id),
            task_id: Some(task.id),
            ..EntryDraft::default()
        },
        EntryDraft {
            tag_ids: vec![tag.id, TagId(uuid::Uuid::from_u128(999))],
            ..EntryDraft::default()
        },
    ];
    for draft in bad {
        let err = run_ready(world.entries.start(&caller, draft.clone())).unwrap_err();
        assert!(
            matches!(err, DomainError::Validation(_)),
            "{draft:?}: {err:?}"
        );
    }
    // A task implies its project; duplicate tags collapse.
    let entry = run_ready(world.entries.start(
        &caller,
        EntryDraft {
            task_id: Some(task.id),
            tag_ids: vec![tag.id, tag.id],
            ..EntryDraft::default()
        },
    ))
    .unwrap();
    assert_eq!(
        (entry.project_id, entry.task_id, entry.tag_ids),
        (Some(project.id), Some(task.id), vec![tag.id])
    );
    let (_, body) = bodies(&world).pop().unwrap();
    assert_eq!(body["project"]["name"], "Site");
    assert_eq!(body["task"]["name"], "Design");
    assert_eq!(body["tags"][0]["name"], "urgent");
}

#[test]
fn fallbacks_use_the_latest_real_entry_or_the_sample() {
    let (world, caller) = setup();
    assert_eq!(
        run_ready(world.entries.manual_fallback(&caller)).unwrap(),
        payload::samples::time_entry(EntryAction::ManualEntry)
    );
    assert_eq!(
        run_ready(world.entries.stopped_fallback(&caller)).unwrap(),
        payload::samples::time_entry(EntryAction::StopTimer)
    );
    assert_eq!(
        run_ready(world.entries.started_fallback(&caller)).unwrap(),
        payload::samples::time_entry(EntryAction::StartTimer)
    );

    let running = run_ready(world.entries.start(&caller, EntryDraft::default())).unwrap();
    // A running timer is a started one, not a stopped one.
    assert_eq!(
        run_ready(world.entries.started_fallback(&caller))
            .unwrap()
            .id,
        running.id.to_string()
    );
    assert_eq!(
        run_ready(world.entries.stopped_fallback(&caller)).unwrap(),
        payload::samples::time_entry(EntryAction::StopTimer)
    );
    world.clock.advance(Duration::seconds(30));
    run_ready(world.entries.stop(&caller)).unwrap();
    let stopped = run_ready(world.entries.stopped_fallback(&caller)).unwrap();
    assert_eq!(
        (stopped.id, stopped.duration),
        (running.id.to_string(), Some(30))
    );
    let start = datetime!(2026-01-01 08:00 UTC);
    let manual = run_ready(world.entries.create_manual(
        &caller,
        EntryDraft::default(),
        start,
        start + Duration::minutes(5),
    ))
    .unwrap();
    assert_eq!(
        run_ready(world.entries.manual_fallback(&caller))
            .unwrap()
            .id,
        manual.id.to_string()
    );
}
