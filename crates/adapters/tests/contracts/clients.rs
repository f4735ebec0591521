//! Clients and the client search.

use super::*;

contract!(clients_are_unique_by_name_per_workspace_and_listed_newest_first);
contract!(client_search_is_a_literal_substring_of_the_lowercased_name);
contract!(client_updates_and_deletes_name_what_is_missing);
contract!(clients_are_listed_by_name_and_by_when_they_changed);

async fn clients_are_unique_by_name_per_workspace_and_listed_newest_first(s: Subject) {
    let (ws, _) = seeded(&s, 1).await;
    let (other, _) = seeded(&s, 2).await;
    let acme = client(10, &ws, "Acme", 0);
    s.clients.create(&acme, &[]).await.unwrap();
    assert_eq!(
        s.clients.get(ws.id, acme.id).await.unwrap(),
        Some(acme.clone())
    );
    assert_eq!(
        s.clients.get(other.id, acme.id).await.unwrap(),
        None,
        "another workspace's client is not found"
    );

    match s.clients.create(&client(11, &ws, "ACME", 1), &[]).await {
        Err(DomainError::AlreadyExists { what, id }) => {
            assert_eq!((what, id), ("client", acme.id.to_string()));
        }
        other => panic!("{other:?}"),
    }
    assert_eq!(s.clients.get(ws.id, ClientId(id(11))).await.unwrap(), None);
    // The same name in another workspace is another client.
    s.clients
        .create(&client(12, &other, "Acme", 1), &[])
        .await
        .unwrap();

    for (n, name) in [(13, "Beta"), (14, "Gamma"), (15, "Delta")] {
        let minutes = i64::try_from(n).unwrap();
        s.clients
            .create(&client(n, &ws, name, minutes), &[])
            .await
            .unwrap();
    }
    let first = s
        .clients
        .list(
            ws.id,
            &ListFilter::default(),
            PageRequest::new(Some(3), None).unwrap(),
        )
        .await
        .unwrap();
    assert_eq!(names(&first.items), ["Delta", "Gamma", "Beta"]);
    let cursor = first.next.expect("a next page").encode();
    let second = s
        .clients
        .list(
            ws.id,
            &ListFilter::default(),
            PageRequest::new(Some(3), Some(&cursor)).unwrap(),
        )
        .await
        .unwrap();
    assert_eq!(names(&second.items), ["Acme"]);
    assert!(second.next.is_none());
    assert_eq!(
        s.clients.newest(ws.id).await.unwrap().map(|c| c.name),
        Some("Delta".to_owned())
    );
    assert_eq!(s.clients.newest(WorkspaceId(id(77))).await.unwrap(), None);
}

async fn client_search_is_a_literal_substring_of_the_lowercased_name(s: Subject) {
    let (ws, _) = seeded(&s, 1).await;
    let (other, _) = seeded(&s, 2).await;
    for (n, name) in [
        (10, "Acme Logistics"),
        (11, "Logistics 100%"),
        (12, "Blue_Sky"),
        (13, "BlueXSky"),
        (14, "Zeta"),
    ] {
        let minutes = i64::try_from(n).unwrap();
        s.clients
            .create(&client(n, &ws, name, minutes), &[])
            .await
            .unwrap();
    }
    s.clients
        .create(&client(20, &other, "Other Logistics", 30), &[])
        .await
        .unwrap();
    let search = |needle: &'static str, limit: u32| {
        let clients = s.clients.clone();
        async move {
            let found = clients.search(ws.id, needle, limit).await.unwrap();
            found.into_iter().map(|c| c.name).collect::<Vec<_>>()
        }
    };
    assert_eq!(
        search("logistics", 10).await,
        ["Logistics 100%", "Acme Logistics"],
        "newest first, this workspace only"
    );
    assert_eq!(search("logistics", 1).await, ["Logistics 100%"]);
    assert_eq!(search("%", 10).await, ["Logistics 100%"], "% is literal");
    assert_eq!(search("e_s", 10).await, ["Blue_Sky"], "_ is literal");
    assert_eq!(search("ze", 10).await, ["Zeta"], "a short needle");
    assert!(search("nothing", 10).await.is_empty());
}

async fn client_updates_and_deletes_name_what_is_missing(s: Subject) {
    let (ws, _) = seeded(&s, 1).await;
    let acme = client(10, &ws, "Acme", 0);
    let beta = client(11, &ws, "Beta", 1);
    s.clients.create(&acme, &[]).await.unwrap();
    s.clients.create(&beta, &[]).await.unwrap();

    let renamed = Client {
        name: "Acme Corporation".into(),
        note: Some("renamed".into()),
        updated_at: T0 + Duration::hours(1),
        ..acme.clone()
    };
    let updated = event(40, ws.id, EventType::ClientUpdated, 60);
    assert_eq!(
        s.clients
            .update(&acme, &renamed, std::slice::from_ref(&updated))
            .await
            .unwrap(),
        WriteOutcome::Applied
    );
    assert_eq!(
        s.clients.get(ws.id, acme.id).await.unwrap(),
        Some(renamed.clone())
    );
    assert_eq!(s.outbox.events().await, std::slice::from_ref(&updated));

    match s
        .clients
        .update(
            &renamed,
            &Client {
                name: "beta".into(),
                ..renamed.clone()
            },
            &[],
        )
        .await
    {
        Err(DomainError::AlreadyExists { what, id }) => {
            assert_eq!((what, id), ("client", beta.id.to_string()));
        }
        other => panic!("{other:?}"),
    }
    // A client changed since it was read, a missing one and another workspace's are not written,
    // nor are their events.
    let ghost = client(99, &ws, "Ghost", 2);
    for (before, after) in [
        (
            &acme,
            &Client {
                name: "Stale".into(),
                ..acme.clone()
            },
        ),
        (&ghost, &ghost),
        (
            &Client {
                workspace_id: WorkspaceId(id(2)),
                ..renamed.clone()
            },
            &Client {
                workspace_id: WorkspaceId(id(2)),
                name: "Moved".into(),
                ..renamed.clone()
            },
        ),
    ] {
        let stray = event(41, ws.id, EventType::ClientUpdated, 61);
        assert_eq!(
            s.clients.update(before, after, &[stray]).await.unwrap(),
            WriteOutcome::Raced,
            "{after:?}"
        );
    }
    assert_eq!(
        s.clients.get(ws.id, acme.id).await.unwrap(),
        Some(renamed.clone())
    );
    assert_eq!(s.outbox.events().await, std::slice::from_ref(&updated));

    let deleted = event(42, ws.id, EventType::ClientDeleted, 62);
    assert_eq!(
        s.clients
            .delete(&beta, std::slice::from_ref(&deleted))
            .await
            .unwrap(),
        WriteOutcome::Applied
    );
    assert_eq!(s.clients.get(ws.id, beta.id).await.unwrap(), None);
    assert_eq!(s.outbox.events().await, [updated.clone(), deleted.clone()]);
    assert_eq!(
        s.clients.delete(&beta, &[]).await.unwrap(),
        WriteOutcome::Raced
    );
    // A stale read of a client is not deleted.
    assert_eq!(
        s.clients.delete(&acme, &[]).await.unwrap(),
        WriteOutcome::Raced
    );
    assert!(s.clients.get(ws.id, acme.id).await.unwrap().is_some());
}

async fn clients_are_listed_by_name_and_by_when_they_changed(s: Subject) {
    let (ws, _) = seeded(&s, 1).await;
    let (other, _) = seeded(&s, 2).await;
    for (n, w, name, minutes) in [
        (20, &ws, "Ærztekammer", 1),
        (21, &ws, "Acme", 2),
        (22, &ws, "Mega ACME", 3),
        (23, &other, "Acme", 4),
    ] {
        s.clients
            .create(&client(n, w, name, minutes), &[])
            .await
            .unwrap();
    }
    let listed = |q: Option<&str>, since: Option<i64>| {
        let s = &s;
        let filter = ListFilter {
            q: q.map(str::to_owned),
            updated_since: since.map(|m| T0 + Duration::minutes(m)),
        };
        async move {
            s.clients
                .list(ws.id, &filter, PageRequest::new(None, None).unwrap())
                .await
                .unwrap()
                .items
                .iter()
                .map(|c| c.id.0)
                .collect::<Vec<_>>()
        }
    };
    assert_eq!(listed(Some("acme"), None).await, [id(22), id(21)]);
    assert_eq!(listed(Some("ærz"), None).await, [id(20)]);
    assert_eq!(listed(None, Some(2)).await, [id(22), id(21)]);
    assert_eq!(listed(Some("mega"), Some(4)).await, Vec::<Uuid>::new());
}
