//! Rates and the prices they give entries: the fake (the domain's `choose_rate`) and PostgreSQL
//! (`price_entries.sql`) held to the same answers, on a fixed scenario and on random ones.

use super::*;
use rand::rngs::StdRng;
use rand::{Rng, SeedableRng};
use time::macros::date;
use timetrack_domain::ids::RateId;
use timetrack_domain::model::{
    AppliedRate, PricedEntry, Rate, RateKind, RateTarget, Rounding, StoredPrice, choose_rate,
};
use timetrack_domain::ports::RateEffect;

contract!(a_rate_prices_the_entries_it_reaches_and_a_dry_run_changes_nothing);
contract!(prices_follow_the_client_the_project_and_the_workspace_but_not_into_the_lock);
contract!(random_rates_and_entries_get_the_price_the_domain_rule_gives);

fn rate(
    n: u128,
    ws: &Workspace,
    kind: RateKind,
    target: RateTarget,
    from: time::Date,
    minor: i64,
) -> Rate {
    Rate {
        id: RateId(id(n)),
        workspace_id: ws.id,
        kind,
        target,
        currency: "USD".into(),
        hourly_minor: minor,
        effective_from: from,
        created_at: T0,
    }
}

async fn price(s: &Subject, ws: &Workspace, entry: &TimeEntry) -> StoredPrice {
    s.rates
        .prices(ws.id, &[entry.id])
        .await
        .unwrap()
        .pop()
        .unwrap()
        .1
}

async fn a_rate_prices_the_entries_it_reaches_and_a_dry_run_changes_nothing(s: Subject) {
    let (ws, member) = seeded(&s, 1).await;
    let project = stored_project(&s, 10, &ws).await;
    let mut billable = manual(20, &ws, &member, 0);
    billable.billable = true;
    billable.project_id = Some(project.id);
    s.entries.create(&billable, &[]).await.unwrap();
    let plain = manual(21, &ws, &member, 30);
    s.entries.create(&plain, &[]).await.unwrap();
    assert_eq!(
        price(&s, &ws, &billable).await,
        StoredPrice {
            currency: Some("USD".into()),
            billable: None,
            cost: None,
            invoice_id: None
        },
        "priced when written: its currency, no rate yet"
    );

    let everyone = rate(
        30,
        &ws,
        RateKind::Billable,
        RateTarget::Workspace,
        date!(2026 - 01 - 01),
        6000,
    );
    let dry = s.rates.add(&everyone, Rounding::NONE, true).await.unwrap();
    assert_eq!(
        dry,
        RateEffect {
            affected_entries: 1,
            delta: vec![("USD".into(), 1000)]
        },
        "ten minutes at 60.00"
    );
    assert_eq!(
        price(&s, &ws, &billable).await.billable,
        None,
        "a dry run writes nothing"
    );
    assert_eq!(s.rates.get(ws.id, everyone.id).await.unwrap(), None);

    assert_eq!(
        s.rates.add(&everyone, Rounding::NONE, false).await.unwrap(),
        dry
    );
    assert_eq!(
        price(&s, &ws, &billable).await.billable,
        Some(AppliedRate::of(&everyone))
    );
    assert_eq!(price(&s, &ws, &plain).await.billable, None, "not billable");
    let cost = rate(
        31,
        &ws,
        RateKind::Cost,
        RateTarget::Member(member.id),
        date!(2026 - 01 - 05),
        2000,
    );
    let effect = s.rates.add(&cost, Rounding::NONE, false).await.unwrap();
    assert_eq!(
        (effect.affected_entries, effect.delta),
        (2, vec![]),
        "cost moves no billable amount"
    );
    assert_eq!(
        price(&s, &ws, &plain).await.cost,
        Some(AppliedRate::of(&cost))
    );

    let on_project = rate(
        32,
        &ws,
        RateKind::Billable,
        RateTarget::Project(project.id),
        date!(2026 - 01 - 05),
        9000,
    );
    s.rates
        .add(&on_project, Rounding::NONE, false)
        .await
        .unwrap();
    assert_eq!(
        price(&s, &ws, &billable).await.billable,
        Some(AppliedRate::of(&on_project))
    );
    // A later start date for the same target is a new row; the same date again is a clash.
    let later = Rate {
        id: RateId(id(33)),
        effective_from: date!(2026 - 02 - 01),
        ..on_project.clone()
    };
    s.rates.add(&later, Rounding::NONE, false).await.unwrap();
    assert_eq!(
        price(&s, &ws, &billable).await.billable,
        Some(AppliedRate::of(&on_project)),
        "not yet in force"
    );
    let twin = Rate {
        id: RateId(id(34)),
        ..on_project.clone()
    };
    assert!(matches!(
        s.rates.add(&twin, Rounding::NONE, false).await,
        Err(DomainError::AlreadyExists { what: "rate", id }) if id == on_project.id.to_string()
    ));
    let stranger = rate(
        35,
        &ws,
        RateKind::Billable,
        RateTarget::Project(ProjectId(id(999))),
        date!(2026 - 01 - 01),
        1,
    );
    assert!(matches!(
        s.rates.add(&stranger, Rounding::NONE, false).await,
        Err(DomainError::Validation(m)) if m == "project_id does not name a project of this workspace"
    ));

    let listed = s
        .rates
        .list(
            ws.id,
            &Default::default(),
            PageRequest::new(Some(10), None).unwrap(),
        )
        .await
        .unwrap();
    assert_eq!(listed.items.len(), 4);
    let by_project = timetrack_domain::ports::RateFilter {
        project_id: Some(project.id),
        ..Default::default()
    };
    let listed = s
        .rates
        .list(
            ws.id,
            &by_project,
            PageRequest::new(Some(10), None).unwrap(),
        )
        .await
        .unwrap();
    assert_eq!(listed.items.len(), 2);

    // Deleting the rate that priced an entry prices it again without it.
    s.rates.delete(ws.id, on_project.id).await.unwrap();
    assert_eq!(
        price(&s, &ws, &billable).await.billable,
        Some(AppliedRate::of(&everyone))
    );
    assert!(matches!(
        s.rates.delete(ws.id, on_project.id).await,
        Err(DomainError::NotFound("rate"))
    ));
}

async fn prices_follow_the_client_the_project_and_the_workspace_but_not_into_the_lock(s: Subject) {
    let (ws, member) = seeded(&s, 1).await;
    let eur = Client {
        currency: "EUR".into(),
        ..client(5, &ws, "Euro client", 0)
    };
    s.clients.create(&eur, &[]).await.unwrap();
    let project = stored_project(&s, 10, &ws).await;
    let mut entry = manual(20, &ws, &member, 60);
    entry.billable = true;
    entry.project_id = Some(project.id);
    s.entries.create(&entry, &[]).await.unwrap();
    let usd = rate(
        30,
        &ws,
        RateKind::Billable,
        RateTarget::Workspace,
        date!(2026 - 01 - 01),
        5000,
    );
    let eur_rate = Rate {
        id: RateId(id(31)),
        currency: "EUR".into(),
        hourly_minor: 4000,
        ..usd.clone()
    };
    s.rates.add(&usd, Rounding::NONE, false).await.unwrap();
    s.rates.add(&eur_rate, Rounding::NONE, false).await.unwrap();
    assert_eq!(
        price(&s, &ws, &entry).await.billable,
        Some(AppliedRate::of(&usd))
    );

    // The project gets the euro client: the entry's currency and rate follow.
    let moved = Project {
        client_id: Some(eur.id),
        updated_at: at(1),
        ..project.clone()
    };
    assert_eq!(
        s.catalog
            .update_project(&project, &moved, &[])
            .await
            .unwrap(),
        WriteOutcome::Applied
    );
    let now = price(&s, &ws, &entry).await;
    assert_eq!(
        (now.currency.as_deref(), now.billable),
        (Some("EUR"), Some(AppliedRate::of(&eur_rate)))
    );
    // The client goes to dollars.
    let dollars = Client {
        currency: "USD".into(),
        updated_at: at(2),
        ..eur.clone()
    };
    assert_eq!(
        s.clients.update(&eur, &dollars, &[]).await.unwrap(),
        WriteOutcome::Applied
    );
    assert_eq!(
        price(&s, &ws, &entry).await.billable,
        Some(AppliedRate::of(&usd))
    );

    // A rate from the day after the entry's UTC date: in UTC it does not reach the entry (it
    // starts 2026-01-05 10:00 UTC); in Pacific/Kiritimati (UTC+14) the entry starts on the 6th at
    // 00:00, and the rate reaches it once the workspace moves there.
    let kiritimati = rate(
        32,
        &ws,
        RateKind::Billable,
        RateTarget::Member(member.id),
        date!(2026 - 01 - 06),
        7000,
    );
    s.rates
        .add(&kiritimati, Rounding::NONE, false)
        .await
        .unwrap();
    assert_eq!(
        price(&s, &ws, &entry).await.billable,
        Some(AppliedRate::of(&usd))
    );
    let settings = s.workspaces.settings(ws.id).await.unwrap().unwrap();
    let mut far_east = (ws.clone(), settings.clone());
    far_east.0.timezone = "Pacific/Kiritimati".into();
    assert_eq!(
        s.workspaces
            .update(&(ws.clone(), settings.clone()), &far_east)
            .await
            .unwrap(),
        WriteOutcome::Applied
    );
    assert_eq!(
        price(&s, &ws, &entry).await.billable,
        Some(AppliedRate::of(&kiritimati))
    );

    // Locked (the entry's day is before the lock date): a new rate does not reach it.
    let mut locked = far_east.clone();
    locked.1.lock_before = Some(date!(2026 - 01 - 07));
    assert_eq!(
        s.workspaces.update(&far_east, &locked).await.unwrap(),
        WriteOutcome::Applied
    );
    let higher = RateTarget::ProjectMember(project.id, member.id);
    let higher = rate(
        33,
        &ws,
        RateKind::Billable,
        higher,
        date!(2026 - 01 - 01),
        9900,
    );
    let effect = s.rates.add(&higher, Rounding::NONE, false).await.unwrap();
    assert_eq!(effect.affected_entries, 0);
    assert_eq!(
        price(&s, &ws, &entry).await.billable,
        Some(AppliedRate::of(&kiritimati))
    );
    assert!(matches!(
        s.rates.delete(ws.id, kiritimati.id).await,
        Err(DomainError::Conflict(_))
    ));
}

async fn random_rates_and_entries_get_the_price_the_domain_rule_gives(s: Subject) {
    let (ws, first) = seeded(&s, 1).await;
    let second = user(2, "second@example.com");
    s.users
        .create_member(&second, ws.id, Role::Member, T0)
        .await
        .unwrap();
    let members = [first.clone(), second];
    let mut settings = s.workspaces.settings(ws.id).await.unwrap().unwrap();
    let mut berlin = ws.clone();
    berlin.timezone = "America/New_York".into();
    settings.rounding = Rounding::new(6, RoundingMode::Up).unwrap();
    s.workspaces
        .update(
            &(
                ws.clone(),
                s.workspaces.settings(ws.id).await.unwrap().unwrap(),
            ),
            &(berlin.clone(), settings.clone()),
        )
        .await
        .unwrap();
    let euro = Client {
        currency: "EUR".into(),
        ..client(5, &ws, "Euro", 0)
    };
    s.clients.create(&euro, &[]).await.unwrap();
    let mut projects = vec![
        stored_project(&s, 10, &ws).await,
        stored_project(&s, 11, &ws).await,
    ];
    let euro_project = Project {
        id: ProjectId(id(12)),
        client_id: Some(euro.id),
        ..projects[0].clone()
    };
    s.catalog.create_project(&euro_project, &[]).await.unwrap();
    projects.push(euro_project);
    let task = stored_task(&s, 20, &projects[0]).await;

    let mut rng = StdRng::seed_from_u64(46);
    let days = [
        date!(2026 - 03 - 07),
        date!(2026 - 03 - 08),
        date!(2026 - 03 - 09),
        date!(2026 - 03 - 10),
    ];
    let mut entries = Vec::new();
    for n in 0..40u128 {
        let member = &members[rng.random_range(0..2)];
        // Around the US change to summer time (2026-03-08) and local midnights.
        let minutes = rng.random_range(0..4 * 24 * 60) + 3 * 24 * 60;
        let mut entry = manual(100 + n, &ws, member, minutes);
        entry.end = Some(entry.start + Duration::seconds(rng.random_range(1..10_000)));
        entry.billable = rng.random_bool(0.7);
        let project = rng.random_range(0..4);
        if project < 3 {
            entry.project_id = Some(projects[project].id);
            if project == 0 && rng.random_bool(0.5) {
                entry.task_id = Some(task.id);
            }
        }
        s.entries.create(&entry, &[]).await.unwrap();
        entries.push(entry);
    }
    let mut rates = Vec::new();
    for n in 0..25u128 {
        let target = match rng.random_range(0..6) {
            0 => RateTarget::Workspace,
            1 => RateTarget::Member(members[rng.random_range(0..2)].id),
            2 => RateTarget::Client(euro.id),
            3 => RateTarget::Project(projects[rng.random_range(0..3)].id),
            4 => RateTarget::Task(task.id),
            _ => RateTarget::ProjectMember(
                projects[rng.random_range(0..3)].id,
                members[rng.random_range(0..2)].id,
            ),
        };
        let kind = if rng.random_bool(0.7) {
            RateKind::Billable
        } else {
            RateKind::Cost
        };
        let candidate = Rate {
            currency: if rng.random_bool(0.5) { "USD" } else { "EUR" }.into(),
            ..rate(
                500 + n,
                &ws,
                kind,
                target,
                days[rng.random_range(0..4)],
                rng.random_range(0..50_000),
            )
        };
        // A clash is refused; the others are added, some as dry runs.
        match s
            .rates
            .add(&candidate, settings.rounding, rng.random_bool(0.2))
            .await
        {
            Ok(_) => rates.push(candidate),
            Err(DomainError::AlreadyExists { .. }) => {}
            Err(other) => panic!("{other}"),
        }
    }
    let stored: Vec<Rate> = s
        .rates
        .list(
            ws.id,
            &Default::default(),
            PageRequest::new(Some(200), None).unwrap(),
        )
        .await
        .unwrap()
        .items;
    for entry in &entries {
        let project = entry
            .project_id
            .and_then(|p| projects.iter().find(|q| q.id == p));
        let priced = PricedEntry {
            user_id: entry.user_id,
            project_id: entry.project_id,
            task_id: entry.task_id,
            client_id: project.and_then(|p| p.client_id),
            currency: if project.is_some_and(|p| p.client_id.is_some()) {
                "EUR"
            } else {
                "USD"
            }
            .into(),
            day: timetrack_domain::timefmt::local_day(entry.start, "America/New_York").unwrap(),
            billable: entry.billable,
        };
        let expected = StoredPrice {
            currency: Some(priced.currency.clone()),
            billable: choose_rate(&stored, &priced, RateKind::Billable).map(AppliedRate::of),
            cost: choose_rate(&stored, &priced, RateKind::Cost).map(AppliedRate::of),
            invoice_id: None,
        };
        assert_eq!(
            price(&s, &ws, entry).await,
            expected,
            "entry {} ({priced:?})",
            entry.id
        );
    }
    let _ = rates;
}
