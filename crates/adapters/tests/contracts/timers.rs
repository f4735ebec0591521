//! Timers, and entry writes that name another workspace's things.

use super::*;

contract!(timers_run_one_per_user_and_stop_only_while_running);
contract!(entry_writes_refuse_references_outside_the_workspace_and_write_nothing);

async fn timers_run_one_per_user_and_stop_only_while_running(s: Subject) {
    let (ws, member) = seeded(&s, 1).await;
    let (other, colleague) = seeded(&s, 2).await;
    s.users
        .add_membership(member.id, other.id, Role::Member, T0)
        .await
        .unwrap();
    assert_eq!(s.entries.running(member.id).await.unwrap(), None);

    let first = timer(100, &ws, &member, 0);
    let first_started = event(500, ws.id, EventType::TimerStarted, 0);
    assert_eq!(
        s.entries
            .start(None, &first, std::slice::from_ref(&first_started))
            .await
            .unwrap(),
        WriteOutcome::Applied
    );
    assert_eq!(
        s.entries.running(member.id).await.unwrap(),
        Some(first.clone())
    );
    assert_eq!(
        s.entries.get(ws.id, first.id).await.unwrap(),
        Some(first.clone())
    );
    assert_eq!(
        s.outbox.events().await,
        std::slice::from_ref(&first_started)
    );

    // Another user's timer runs beside it.
    let theirs = timer(101, &other, &colleague, 1);
    assert_eq!(
        s.entries.start(None, &theirs, &[]).await.unwrap(),
        WriteOutcome::Applied
    );
    assert_eq!(
        s.entries.running(colleague.id).await.unwrap(),
        Some(theirs.clone())
    );
    assert_eq!(
        s.entries.running(member.id).await.unwrap(),
        Some(first.clone())
    );

    // A second timer of the same user, even in another workspace, while the first runs.
    let second = timer(102, &other, &member, 30);
    assert_eq!(
        s.entries
            .start(
                None,
                &second,
                &[event(501, other.id, EventType::TimerStarted, 30)]
            )
            .await
            .unwrap(),
        WriteOutcome::Raced
    );
    // Stopping a timer that is not running (no entry has this id) before starting.
    let ghost = timer(199, &ws, &member, 0);
    assert_eq!(
        s.entries
            .start(
                Some(&stop_of(&ghost, 502, 30)),
                &second,
                &[event(503, other.id, EventType::TimerStarted, 30)]
            )
            .await
            .unwrap(),
        WriteOutcome::Raced
    );
    assert_eq!(
        s.entries.get(other.id, second.id).await.unwrap(),
        None,
        "nothing stored"
    );
    assert_eq!(
        s.entries.running(member.id).await.unwrap(),
        Some(first.clone()),
        "nothing stopped"
    );
    assert_eq!(
        s.outbox.events().await,
        std::slice::from_ref(&first_started),
        "no event recorded"
    );

    // The stop and the start in one write, with both events.
    let stop_first = stop_of(&first, 504, 30);
    let second_started = event(505, other.id, EventType::TimerStarted, 30);
    assert_eq!(
        s.entries
            .start(
                Some(&stop_first),
                &second,
                std::slice::from_ref(&second_started)
            )
            .await
            .unwrap(),
        WriteOutcome::Applied
    );
    let first_stopped = stopped(&first, &stop_first);
    assert_eq!(
        s.entries.get(ws.id, first.id).await.unwrap(),
        Some(first_stopped.clone()),
        "ended, updated at the stop event's time"
    );
    assert_eq!(
        s.entries.running(member.id).await.unwrap(),
        Some(second.clone())
    );
    assert_eq!(
        s.outbox.events().await,
        [
            first_started.clone(),
            stop_first.event.clone(),
            second_started.clone()
        ]
    );

    // A stopped timer stops no more, alone or before a start: nothing written.
    assert_eq!(
        s.entries.stop(&stop_of(&first, 506, 40)).await.unwrap(),
        WriteOutcome::Raced
    );
    let third = timer(103, &ws, &member, 40);
    assert_eq!(
        s.entries
            .start(
                Some(&stop_of(&first, 507, 40)),
                &third,
                &[event(508, ws.id, EventType::TimerStarted, 40)]
            )
            .await
            .unwrap(),
        WriteOutcome::Raced
    );
    assert_eq!(
        s.entries.get(ws.id, first.id).await.unwrap(),
        Some(first_stopped)
    );
    assert_eq!(s.entries.get(ws.id, third.id).await.unwrap(), None);
    assert_eq!(
        s.entries.running(member.id).await.unwrap(),
        Some(second.clone())
    );

    let stop_second = stop_of(&second, 509, 60);
    assert_eq!(
        s.entries.stop(&stop_second).await.unwrap(),
        WriteOutcome::Applied
    );
    assert_eq!(s.entries.running(member.id).await.unwrap(), None);
    assert_eq!(
        s.entries.get(other.id, second.id).await.unwrap(),
        Some(stopped(&second, &stop_second))
    );
    assert_eq!(
        s.entries.stop(&stop_of(&second, 510, 70)).await.unwrap(),
        WriteOutcome::Raced
    );
    assert_eq!(
        s.entries.stop(&stop_of(&ghost, 511, 70)).await.unwrap(),
        WriteOutcome::Raced
    );
    assert_eq!(
        s.entries.running(colleague.id).await.unwrap(),
        Some(theirs),
        "another user's timer untouched"
    );
    assert_eq!(
        s.outbox.events().await,
        [
            first_started,
            stop_first.event,
            second_started,
            stop_second.event
        ]
    );
}

async fn entry_writes_refuse_references_outside_the_workspace_and_write_nothing(s: Subject) {
    const NOT_OUR_PROJECT: &str = "project_id does not name a project of this workspace";
    const NOT_ITS_TASK: &str = "task_id does not belong to project_id";
    const NOT_OUR_TAG: &str = "tag_ids contains an id that is not a tag of this workspace";
    let (ws, member) = seeded(&s, 1).await;
    let (other, stranger) = seeded(&s, 2).await;
    let website = stored_project(&s, 20, &ws).await;
    let design = stored_task(&s, 30, &website).await;
    let intranet = stored_project(&s, 21, &ws).await;
    let wiki = stored_task(&s, 31, &intranet).await;
    let urgent = stored_tag(&s, 40, &ws).await;
    let their_project = stored_project(&s, 22, &other).await;
    let their_tag = stored_tag(&s, 41, &other).await;

    let entry = manual(100, &ws, &member, 0);
    let refused = [
        (
            TimeEntry {
                project_id: Some(their_project.id),
                ..entry.clone()
            },
            NOT_OUR_PROJECT,
        ),
        (
            TimeEntry {
                project_id: Some(website.id),
                task_id: Some(wiki.id),
                ..entry.clone()
            },
            NOT_ITS_TASK,
        ),
        (
            TimeEntry {
                tag_ids: vec![urgent.id, their_tag.id],
                ..entry.clone()
            },
            NOT_OUR_TAG,
        ),
        (
            TimeEntry {
                tag_ids: vec![urgent.id, urgent.id],
                ..entry.clone()
            },
            NOT_OUR_TAG,
        ),
    ];
    for (n, (refused, message)) in (500..).zip(&refused) {
        let created = event(n, ws.id, EventType::TimeEntryCreated, 10);
        match s.entries.create(refused, &[created]).await {
            Err(DomainError::Validation(m)) => assert_eq!(m, *message),
            other => panic!("{message}: {other:?}"),
        }
    }
    // A user who is no member of the workspace has no entries in it.
    let outsiders = TimeEntry {
        user_id: stranger.id,
        ..entry.clone()
    };
    let created = event(504, ws.id, EventType::TimeEntryCreated, 10);
    assert!(matches!(
        s.entries.create(&outsiders, &[created]).await,
        Err(DomainError::Unexpected(_))
    ));
    assert_eq!(
        s.entries.get(ws.id, entry.id).await.unwrap(),
        None,
        "nothing stored"
    );
    assert_eq!(s.outbox.events().await, [], "no event recorded");

    // With the workspace's own project, task and tag it is stored, with its event.
    let kept = TimeEntry {
        project_id: Some(website.id),
        task_id: Some(design.id),
        tag_ids: vec![urgent.id],
        ..entry.clone()
    };
    let created = event(505, ws.id, EventType::TimeEntryCreated, 10);
    s.entries
        .create(&kept, std::slice::from_ref(&created))
        .await
        .unwrap();
    assert_eq!(
        s.entries.get(ws.id, kept.id).await.unwrap(),
        Some(kept.clone())
    );
    assert_eq!(s.outbox.events().await, std::slice::from_ref(&created));

    // A replacement naming another workspace's rows changes nothing.
    let replacements = [
        (
            TimeEntry {
                project_id: Some(their_project.id),
                task_id: None,
                ..kept.clone()
            },
            NOT_OUR_PROJECT,
        ),
        (
            TimeEntry {
                task_id: Some(wiki.id),
                ..kept.clone()
            },
            NOT_ITS_TASK,
        ),
        (
            TimeEntry {
                description: "Retagged".into(),
                tag_ids: vec![their_tag.id],
                ..kept.clone()
            },
            NOT_OUR_TAG,
        ),
    ];
    for (refused, message) in &replacements {
        match s.entries.update(&kept, refused, &[]).await {
            Err(DomainError::Validation(m)) => assert_eq!(m, *message),
            other => panic!("{message}: {other:?}"),
        }
    }
    assert_eq!(
        s.entries.get(ws.id, kept.id).await.unwrap(),
        Some(kept.clone()),
        "unchanged, tags included"
    );

    // A start whose entry is refused leaves the timer it would have stopped running.
    let running = timer(101, &ws, &member, 20);
    let started = event(506, ws.id, EventType::TimerStarted, 20);
    assert_eq!(
        s.entries
            .start(None, &running, std::slice::from_ref(&started))
            .await
            .unwrap(),
        WriteOutcome::Applied
    );
    let next = TimeEntry {
        project_id: Some(their_project.id),
        ..timer(102, &ws, &member, 30)
    };
    match s
        .entries
        .start(
            Some(&stop_of(&running, 507, 30)),
            &next,
            &[event(508, ws.id, EventType::TimerStarted, 30)],
        )
        .await
    {
        Err(DomainError::Validation(m)) => assert_eq!(m, NOT_OUR_PROJECT),
        other => panic!("{other:?}"),
    }
    assert_eq!(
        s.entries.running(member.id).await.unwrap(),
        Some(running),
        "the stop is undone"
    );
    assert_eq!(s.entries.get(ws.id, next.id).await.unwrap(), None);
    assert_eq!(s.outbox.events().await, [created, started]);
}
