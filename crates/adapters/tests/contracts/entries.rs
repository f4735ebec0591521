//! Time entries: reads, changes, lists and the latest of each kind.

use super::*;

contract!(entries_are_read_replaced_and_deleted_only_in_their_workspace);
contract!(entries_are_listed_latest_start_first_filtered_and_paged);
contract!(latest_manual_stopped_and_started_entries_are_per_workspace);

async fn entries_are_read_replaced_and_deleted_only_in_their_workspace(s: Subject) {
    let (ws, member) = seeded(&s, 1).await;
    let (other, _) = seeded(&s, 2).await;
    let website = stored_project(&s, 20, &ws).await;
    let design = stored_task(&s, 30, &website).await;
    let urgent = stored_tag(&s, 40, &ws).await;
    let billable = stored_tag(&s, 41, &ws).await;

    let entry = TimeEntry {
        description: "Design review".into(),
        project_id: Some(website.id),
        task_id: Some(design.id),
        tag_ids: vec![billable.id, urgent.id],
        billable: true,
        ..manual(100, &ws, &member, 0)
    };
    let created = event(500, ws.id, EventType::TimeEntryCreated, 10);
    s.entries
        .create(&entry, std::slice::from_ref(&created))
        .await
        .unwrap();
    assert_eq!(s.outbox.events().await, std::slice::from_ref(&created));
    assert_eq!(
        s.entries.get(ws.id, entry.id).await.unwrap(),
        Some(TimeEntry {
            tag_ids: vec![urgent.id, billable.id],
            ..entry.clone()
        }),
        "tags read back in id order"
    );
    assert_eq!(
        s.entries.get(other.id, entry.id).await.unwrap(),
        None,
        "another workspace's entry is not found"
    );
    assert_eq!(
        s.entries.get(ws.id, TimeEntryId(id(199))).await.unwrap(),
        None
    );

    let replaced = TimeEntry {
        description: "Review".into(),
        project_id: None,
        task_id: None,
        tag_ids: vec![billable.id],
        billable: false,
        start: at(5),
        end: Some(at(25)),
        updated_at: at(60),
        ..entry.clone()
    };
    let updated = event(501, ws.id, EventType::TimeEntryUpdated, 60);
    assert_eq!(
        s.entries
            .update(&entry, &replaced, std::slice::from_ref(&updated))
            .await
            .unwrap(),
        WriteOutcome::Applied
    );
    assert_eq!(
        s.entries.get(ws.id, entry.id).await.unwrap(),
        Some(replaced.clone())
    );
    let untagged = TimeEntry {
        tag_ids: vec![],
        updated_at: at(61),
        ..replaced.clone()
    };
    assert_eq!(
        s.entries.update(&replaced, &untagged, &[]).await.unwrap(),
        WriteOutcome::Applied
    );
    assert_eq!(
        s.entries.get(ws.id, entry.id).await.unwrap(),
        Some(untagged.clone())
    );
    assert_eq!(
        s.outbox.events().await,
        [created.clone(), updated.clone()],
        "a replacement records the events it is given"
    );

    // A stale read, another workspace's entry and a missing one are not written.
    for (before, after) in [
        (
            &replaced,
            &TimeEntry {
                description: "Stale".into(),
                ..untagged.clone()
            },
        ),
        (
            &TimeEntry {
                workspace_id: other.id,
                ..untagged.clone()
            },
            &TimeEntry {
                workspace_id: other.id,
                description: "Moved".into(),
                ..untagged.clone()
            },
        ),
        (&manual(101, &ws, &member, 0), &manual(101, &ws, &member, 0)),
    ] {
        let stray = event(502, ws.id, EventType::TimeEntryUpdated, 62);
        assert_eq!(
            s.entries.update(before, after, &[stray]).await.unwrap(),
            WriteOutcome::Raced,
            "{after:?}"
        );
    }
    assert_eq!(
        s.entries.get(ws.id, entry.id).await.unwrap(),
        Some(untagged.clone())
    );
    assert_eq!(
        s.entries.get(ws.id, TimeEntryId(id(101))).await.unwrap(),
        None
    );

    assert_eq!(
        s.entries
            .delete(
                &TimeEntry {
                    workspace_id: other.id,
                    ..untagged.clone()
                },
                &[]
            )
            .await
            .unwrap(),
        WriteOutcome::Raced
    );
    assert_eq!(
        s.entries.delete(&replaced, &[]).await.unwrap(),
        WriteOutcome::Raced
    );
    assert_eq!(
        s.entries.get(ws.id, entry.id).await.unwrap(),
        Some(untagged.clone())
    );
    let deleted = event(503, ws.id, EventType::TimeEntryDeleted, 63);
    assert_eq!(
        s.entries
            .delete(&untagged, std::slice::from_ref(&deleted))
            .await
            .unwrap(),
        WriteOutcome::Applied
    );
    assert_eq!(s.entries.get(ws.id, entry.id).await.unwrap(), None);
    assert_eq!(s.outbox.events().await, [created, updated, deleted]);
    assert_eq!(
        s.entries.delete(&untagged, &[]).await.unwrap(),
        WriteOutcome::Raced
    );

    // Deleting a running timer lets its user start another.
    let first = timer(102, &ws, &member, 30);
    assert_eq!(
        s.entries.start(None, &first, &[]).await.unwrap(),
        WriteOutcome::Applied
    );
    assert_eq!(
        s.entries.delete(&first, &[]).await.unwrap(),
        WriteOutcome::Applied
    );
    assert_eq!(s.entries.running(member.id).await.unwrap(), None);
    let second = timer(103, &ws, &member, 40);
    assert_eq!(
        s.entries.start(None, &second, &[]).await.unwrap(),
        WriteOutcome::Applied
    );
    assert_eq!(s.entries.running(member.id).await.unwrap(), Some(second));
}

/// A page of `workspace`'s entries, the cursor passed in its text form.
async fn listed(
    s: &Subject,
    workspace: WorkspaceId,
    filter: EntryFilter,
    limit: u32,
    after: Option<Cursor>,
) -> Page<TimeEntry> {
    let cursor = after.map(|c| c.encode());
    let page = PageRequest::new(Some(limit), cursor.as_deref()).unwrap();
    s.entries.list(workspace, filter, page).await.unwrap()
}

async fn entries_are_listed_latest_start_first_filtered_and_paged(s: Subject) {
    let (ws, member) = seeded(&s, 1).await;
    let (other, outsider) = seeded(&s, 2).await;
    let colleague = user(3, "colleague@example.com");
    s.users
        .create_member(&colleague, ws.id, Role::Member, T0)
        .await
        .unwrap();
    let urgent = stored_tag(&s, 40, &ws).await;

    let tagged = TimeEntry {
        tag_ids: vec![urgent.id],
        ..manual(113, &ws, &member, 120)
    };
    for entry in [
        manual(110, &ws, &member, 0),
        manual(112, &ws, &member, 60),
        manual(111, &ws, &colleague, 60),
        tagged.clone(),
        manual(114, &ws, &colleague, 180),
        manual(120, &other, &outsider, 100),
    ] {
        s.entries.create(&entry, &[]).await.unwrap();
    }
    let running = timer(115, &ws, &member, 240);
    assert_eq!(
        s.entries.start(None, &running, &[]).await.unwrap(),
        WriteOutcome::Applied
    );

    let all = EntryFilter::default();
    let first = listed(&s, ws.id, all, 4, None).await;
    assert_eq!(numbers(&first.items), [115, 114, 113, 112]);
    assert_eq!(first.items[0], running, "a running timer is listed");
    assert_eq!(first.items[2], tagged, "with its tags");
    assert_eq!(
        first.next,
        Some(Cursor {
            created_at: at(60),
            id: id(112)
        }),
        "the cursor's time is the start"
    );
    let second = listed(&s, ws.id, all, 4, first.next).await;
    assert_eq!(
        numbers(&second.items),
        [111, 110],
        "equal starts ordered by id"
    );
    assert_eq!(second.next, None);
    let exact = listed(&s, ws.id, all, 6, None).await;
    assert_eq!(numbers(&exact.items), [115, 114, 113, 112, 111, 110]);
    assert_eq!(exact.next, None, "no next page when exactly full");

    let window = EntryFilter {
        from: Some(at(60)),
        to: Some(at(180)),
        user: None,
    };
    assert_eq!(
        numbers(&listed(&s, ws.id, window, 50, None).await.items),
        [113, 112, 111],
        "from inclusive, to exclusive"
    );
    let theirs = EntryFilter {
        user: Some(colleague.id),
        ..all
    };
    assert_eq!(
        numbers(&listed(&s, ws.id, theirs, 50, None).await.items),
        [114, 111]
    );

    let mine_since = EntryFilter {
        from: Some(at(60)),
        user: Some(member.id),
        ..all
    };
    let mut after = None;
    for (expected, more) in [(115, true), (113, true), (112, false)] {
        let page = listed(&s, ws.id, mine_since, 1, after).await;
        assert_eq!(numbers(&page.items), [expected]);
        assert_eq!(page.next.is_some(), more, "after {expected}");
        after = page.next;
    }

    let outsiders = EntryFilter {
        user: Some(outsider.id),
        ..all
    };
    assert_eq!(listed(&s, ws.id, outsiders, 50, None).await.items, []);
    assert_eq!(
        numbers(&listed(&s, other.id, all, 50, None).await.items),
        [120]
    );
    let nowhere = listed(&s, WorkspaceId(id(77)), all, 50, None).await;
    assert_eq!((nowhere.items, nowhere.next), (vec![], None));
}

async fn latest_manual_stopped_and_started_entries_are_per_workspace(s: Subject) {
    let (ws, member) = seeded(&s, 1).await;
    let (other, outsider) = seeded(&s, 2).await;
    let colleague = user(3, "colleague@example.com");
    s.users
        .create_member(&colleague, ws.id, Role::Member, T0)
        .await
        .unwrap();
    s.users
        .add_membership(member.id, other.id, Role::Member, T0)
        .await
        .unwrap();
    assert_eq!(
        s.entries.latest_manual(ws.id, member.id).await.unwrap(),
        None
    );
    assert_eq!(s.entries.latest_stopped(ws.id).await.unwrap(), None);
    assert_eq!(s.entries.latest_started(ws.id).await.unwrap(), None);

    // The latest manual entry is the last created, whatever its times and the insertion order.
    let newer = TimeEntry {
        created_at: at(400),
        ..manual(101, &ws, &member, -600)
    };
    let older = TimeEntry {
        created_at: at(300),
        ..manual(100, &ws, &member, 0)
    };
    let colleagues = TimeEntry {
        created_at: at(500),
        ..manual(102, &ws, &colleague, 0)
    };
    let elsewhere = TimeEntry {
        created_at: at(600),
        ..manual(103, &other, &member, 0)
    };
    for entry in [&newer, &older, &colleagues, &elsewhere] {
        s.entries.create(entry, &[]).await.unwrap();
    }
    assert_eq!(
        s.entries.latest_manual(ws.id, member.id).await.unwrap(),
        Some(newer.clone())
    );
    assert_eq!(
        s.entries.latest_manual(ws.id, colleague.id).await.unwrap(),
        Some(colleagues)
    );
    assert_eq!(
        s.entries.latest_manual(other.id, member.id).await.unwrap(),
        Some(elsewhere)
    );
    assert_eq!(
        s.entries
            .latest_manual(other.id, colleague.id)
            .await
            .unwrap(),
        None
    );
    assert_eq!(
        s.entries.latest_stopped(ws.id).await.unwrap(),
        None,
        "manual entries are no timers"
    );
    assert_eq!(s.entries.latest_started(ws.id).await.unwrap(), None);

    let early = timer(110, &ws, &member, 100);
    let late = timer(111, &ws, &colleague, 130);
    for timer in [&early, &late] {
        assert_eq!(
            s.entries.start(None, timer, &[]).await.unwrap(),
            WriteOutcome::Applied
        );
    }
    assert_eq!(
        s.entries.latest_started(ws.id).await.unwrap(),
        Some(late.clone()),
        "running or not"
    );
    assert_eq!(s.entries.latest_stopped(ws.id).await.unwrap(), None);
    let stop_late = stop_of(&late, 500, 160);
    let stop_early = stop_of(&early, 501, 200);
    for stop in [&stop_late, &stop_early] {
        assert_eq!(s.entries.stop(stop).await.unwrap(), WriteOutcome::Applied);
    }
    assert_eq!(
        s.entries.latest_stopped(ws.id).await.unwrap(),
        Some(stopped(&early, &stop_early)),
        "by end, not start"
    );
    assert_eq!(
        s.entries.latest_started(ws.id).await.unwrap(),
        Some(stopped(&late, &stop_late))
    );

    // Of two timers stopped at the same time, the greater id.
    let tied = timer(112, &ws, &colleague, 170);
    let stop_tied = stop_of(&tied, 502, 200);
    assert_eq!(
        s.entries.start(None, &tied, &[]).await.unwrap(),
        WriteOutcome::Applied
    );
    assert_eq!(
        s.entries.stop(&stop_tied).await.unwrap(),
        WriteOutcome::Applied
    );
    let latest_stop = stopped(&tied, &stop_tied);
    assert_eq!(
        s.entries.latest_stopped(ws.id).await.unwrap(),
        Some(latest_stop.clone())
    );

    // A running timer is the latest started, not stopped; a later manual entry is neither.
    let current = timer(113, &ws, &member, 250);
    assert_eq!(
        s.entries.start(None, &current, &[]).await.unwrap(),
        WriteOutcome::Applied
    );
    s.entries
        .create(&manual(104, &ws, &member, 300), &[])
        .await
        .unwrap();
    assert_eq!(
        s.entries.latest_started(ws.id).await.unwrap(),
        Some(current.clone())
    );
    assert_eq!(
        s.entries.latest_stopped(ws.id).await.unwrap(),
        Some(latest_stop.clone())
    );
    assert_eq!(
        s.entries.latest_manual(ws.id, member.id).await.unwrap(),
        Some(newer),
        "created before the newer one"
    );

    // Another workspace's timers are its own.
    let theirs = timer(114, &other, &outsider, 1000);
    let stop_theirs = stop_of(&theirs, 503, 1100);
    assert_eq!(
        s.entries.start(None, &theirs, &[]).await.unwrap(),
        WriteOutcome::Applied
    );
    assert_eq!(
        s.entries.stop(&stop_theirs).await.unwrap(),
        WriteOutcome::Applied
    );
    assert_eq!(
        s.entries.latest_started(ws.id).await.unwrap(),
        Some(current)
    );
    assert_eq!(
        s.entries.latest_stopped(ws.id).await.unwrap(),
        Some(latest_stop)
    );
    let theirs_stopped = stopped(&theirs, &stop_theirs);
    assert_eq!(
        s.entries.latest_started(other.id).await.unwrap(),
        Some(theirs_stopped.clone())
    );
    assert_eq!(
        s.entries.latest_stopped(other.id).await.unwrap(),
        Some(theirs_stopped)
    );
}
