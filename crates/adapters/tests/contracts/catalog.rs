//! Projects, tasks and tags.

use super::*;

contract!(projects_tasks_and_tags_stay_in_their_workspace);
contract!(projects_are_changed_and_deleted_with_their_events_unless_in_use);
contract!(catalog_lists_filter_by_name_and_change_and_projects_are_found_exact_first);

async fn projects_tasks_and_tags_stay_in_their_workspace(s: Subject) {
    let (ws, _) = seeded(&s, 1).await;
    let (other, _) = seeded(&s, 2).await;
    let acme = client(10, &ws, "Acme", 0);
    let foreign = client(11, &other, "Foreign", 0);
    s.clients.create(&acme, &[]).await.unwrap();
    s.clients.create(&foreign, &[]).await.unwrap();
    let project = |n: u128, client: Option<ClientId>, minutes: i64| Project {
        id: ProjectId(id(n)),
        workspace_id: ws.id,
        client_id: client,
        name: format!("Project {n}"),
        created_at: T0 + Duration::minutes(minutes),
        updated_at: T0 + Duration::minutes(minutes),
    };

    let website = project(20, Some(acme.id), 1);
    s.catalog.create_project(&website, &[]).await.unwrap();
    s.catalog
        .create_project(&project(21, None, 2), &[])
        .await
        .unwrap();
    match s
        .catalog
        .create_project(&project(22, Some(foreign.id), 3), &[])
        .await
    {
        Err(DomainError::Validation(message)) => assert_eq!(
            message,
            "client_id does not name a client of this workspace"
        ),
        other => panic!("{other:?}"),
    }
    assert_eq!(
        s.catalog.project(ws.id, website.id).await.unwrap(),
        Some(website.clone())
    );
    assert_eq!(s.catalog.project(other.id, website.id).await.unwrap(), None);
    let listed = s
        .catalog
        .projects(
            ws.id,
            &ListFilter::default(),
            PageRequest::new(None, None).unwrap(),
        )
        .await
        .unwrap();
    let listed: Vec<ProjectId> = listed.items.iter().map(|p| p.id).collect();
    assert_eq!(listed, [ProjectId(id(21)), website.id], "newest first");
    // A client a project refers to cannot be deleted.
    match s.clients.delete(&acme, &[]).await {
        Err(DomainError::Conflict(message)) => assert_eq!(message, "Client is used by projects"),
        other => panic!("{other:?}"),
    }
    assert!(s.clients.get(ws.id, acme.id).await.unwrap().is_some());

    let task = Task {
        id: TaskId(id(30)),
        workspace_id: ws.id,
        project_id: website.id,
        name: "Design".into(),
        created_at: T0,
        updated_at: T0,
    };
    s.catalog.create_task(&task).await.unwrap();
    assert_eq!(
        s.catalog.task(ws.id, task.id).await.unwrap(),
        Some(task.clone())
    );
    assert_eq!(s.catalog.task(other.id, task.id).await.unwrap(), None);

    let tag = |n: u128, workspace: &Workspace, name: &str| Tag {
        id: TagId(id(n)),
        workspace_id: workspace.id,
        name: name.into(),
        created_at: T0 + Duration::minutes(i64::try_from(n).unwrap()),
    };
    let urgent = tag(40, &ws, "Urgent");
    let later = tag(41, &ws, "Later");
    let theirs = tag(42, &other, "Theirs");
    for t in [&urgent, &later, &theirs] {
        s.catalog.create_tag(t).await.unwrap();
    }
    match s.catalog.create_tag(&tag(43, &ws, "URGENT")).await {
        Err(DomainError::AlreadyExists { what, id }) => {
            assert_eq!((what, id), ("tag", urgent.id.to_string()));
        }
        other => panic!("{other:?}"),
    }
    // Same name in another workspace: another tag.
    s.catalog
        .create_tag(&tag(44, &other, "Urgent"))
        .await
        .unwrap();
    let found = s
        .catalog
        .tags_by_id(ws.id, &[later.id, theirs.id, TagId(id(99)), urgent.id])
        .await
        .unwrap();
    assert_eq!(
        found,
        [later.clone(), urgent.clone()],
        "in ids order, foreign left out"
    );
    let page = s
        .catalog
        .tags(
            ws.id,
            &ListFilter::default(),
            PageRequest::new(None, None).unwrap(),
        )
        .await
        .unwrap();
    assert_eq!(page.items, [later, urgent], "newest first");
}

async fn projects_are_changed_and_deleted_with_their_events_unless_in_use(s: Subject) {
    let (ws, member) = seeded(&s, 1).await;
    let (other, _) = seeded(&s, 2).await;
    let acme = client(10, &ws, "Acme", 0);
    let foreign = client(11, &other, "Foreign", 0);
    s.clients.create(&acme, &[]).await.unwrap();
    s.clients.create(&foreign, &[]).await.unwrap();
    let website = stored_project(&s, 20, &ws).await;
    let created = event(600, ws.id, EventType::ProjectCreated, 0);
    let intranet = Project {
        id: ProjectId(id(21)),
        name: "Intranet".into(),
        ..website.clone()
    };
    s.catalog
        .create_project(&intranet, std::slice::from_ref(&created))
        .await
        .unwrap();

    let renamed = Project {
        name: "Website 2".into(),
        client_id: Some(acme.id),
        updated_at: T0 + Duration::minutes(5),
        ..website.clone()
    };
    let updated = event(601, ws.id, EventType::ProjectUpdated, 5);
    assert_eq!(
        s.catalog
            .update_project(&website, &renamed, std::slice::from_ref(&updated))
            .await
            .unwrap(),
        WriteOutcome::Applied
    );
    assert_eq!(
        s.catalog.project(ws.id, website.id).await.unwrap(),
        Some(renamed.clone())
    );
    // Stale, and another workspace's client: nothing written.
    assert_eq!(
        s.catalog
            .update_project(
                &website,
                &website,
                &[event(602, ws.id, EventType::ProjectUpdated, 6)]
            )
            .await
            .unwrap(),
        WriteOutcome::Raced
    );
    match s
        .catalog
        .update_project(
            &renamed,
            &Project {
                client_id: Some(foreign.id),
                ..renamed.clone()
            },
            &[event(603, ws.id, EventType::ProjectUpdated, 6)],
        )
        .await
    {
        Err(DomainError::Validation(m)) => {
            assert_eq!(m, "client_id does not name a client of this workspace");
        }
        other => panic!("{other:?}"),
    }
    assert_eq!(s.outbox.events().await, [created.clone(), updated.clone()]);

    // A project a time entry is booked on stays; its tasks go with it otherwise.
    let task = stored_task(&s, 30, &renamed).await;
    let entry = TimeEntry {
        project_id: Some(renamed.id),
        ..manual(100, &ws, &member, 0)
    };
    s.entries.create(&entry, &[]).await.unwrap();
    match s
        .catalog
        .delete_project(&renamed, &[event(604, ws.id, EventType::ProjectDeleted, 7)])
        .await
    {
        Err(DomainError::Conflict(m)) => assert_eq!(m, "Project is used by time entries"),
        other => panic!("{other:?}"),
    }
    assert!(
        s.catalog
            .project(ws.id, renamed.id)
            .await
            .unwrap()
            .is_some()
    );
    assert_eq!(
        s.entries.delete(&entry, &[]).await.unwrap(),
        WriteOutcome::Applied
    );
    assert_eq!(
        s.catalog.delete_project(&website, &[]).await.unwrap(),
        WriteOutcome::Raced,
        "a stale read is not deleted"
    );
    let deleted = event(605, ws.id, EventType::ProjectDeleted, 8);
    assert_eq!(
        s.catalog
            .delete_project(&renamed, std::slice::from_ref(&deleted))
            .await
            .unwrap(),
        WriteOutcome::Applied
    );
    assert_eq!(s.catalog.project(ws.id, renamed.id).await.unwrap(), None);
    assert_eq!(s.catalog.task(ws.id, task.id).await.unwrap(), None);
    assert_eq!(s.outbox.events().await, [created, updated, deleted]);
}

async fn catalog_lists_filter_by_name_and_change_and_projects_are_found_exact_first(s: Subject) {
    let (ws, _) = seeded(&s, 1).await;
    let (other, _) = seeded(&s, 2).await;
    let project = |n: u128, ws: &Workspace, name: &str, created: i64, updated: i64| Project {
        id: ProjectId(id(n)),
        workspace_id: ws.id,
        client_id: None,
        name: name.into(),
        created_at: T0 + Duration::minutes(created),
        updated_at: T0 + Duration::minutes(updated),
    };
    for p in [
        project(30, &ws, "Website", 1, 1),
        project(31, &ws, "ÉCOLE website relaunch", 2, 9),
        project(32, &ws, "WEBSITE", 3, 3),
        project(33, &ws, "Intranet", 4, 4),
        project(34, &other, "Website", 5, 5),
    ] {
        s.catalog.create_project(&p, &[]).await.unwrap();
    }
    let all = PageRequest::new(None, None).unwrap();
    let filter = |q: Option<&str>, since: Option<i64>| ListFilter {
        q: q.map(str::to_owned),
        updated_since: since.map(|m| T0 + Duration::minutes(m)),
    };
    let ids = |page: Page<Project>| page.items.iter().map(|p| p.id.0).collect::<Vec<_>>();
    assert_eq!(
        ids(s
            .catalog
            .projects(ws.id, &filter(Some("website"), None), all)
            .await
            .unwrap()),
        [id(32), id(31), id(30)],
        "newest first, every case"
    );
    assert_eq!(
        ids(s
            .catalog
            .projects(ws.id, &filter(Some("école"), None), all)
            .await
            .unwrap()),
        [id(31)],
        "non-ASCII letters fold"
    );
    assert_eq!(
        ids(s
            .catalog
            .projects(ws.id, &filter(None, Some(3)), all)
            .await
            .unwrap()),
        [id(33), id(32), id(31)],
        "updated at or after"
    );
    assert_eq!(
        ids(s
            .catalog
            .projects(ws.id, &filter(Some("%"), None), all)
            .await
            .unwrap()),
        Vec::<Uuid>::new(),
        "literal"
    );
    // Exact names (ignoring case) first, then the rest, each newest first; never another
    // workspace's.
    let found: Vec<Uuid> = s
        .catalog
        .find_projects(ws.id, "website", 100)
        .await
        .unwrap()
        .iter()
        .map(|p| p.id.0)
        .collect();
    assert_eq!(found, [id(32), id(30), id(31)]);
    let one = s.catalog.find_projects(ws.id, "website", 1).await.unwrap();
    assert_eq!(one.len(), 1);
    assert_eq!(one[0].id.0, id(32));
    assert!(
        s.catalog
            .find_projects(ws.id, "nothing", 100)
            .await
            .unwrap()
            .is_empty()
    );

    for (n, name, minutes) in [(40, "Ärger", 1), (41, "billable", 2)] {
        s.catalog
            .create_tag(&Tag {
                id: TagId(id(n)),
                workspace_id: ws.id,
                name: name.into(),
                created_at: T0 + Duration::minutes(minutes),
            })
            .await
            .unwrap();
    }
    let tags = |f: ListFilter| {
        let s = &s;
        async move {
            s.catalog
                .tags(ws.id, &f, all)
                .await
                .unwrap()
                .items
                .iter()
                .map(|t| t.id.0)
                .collect::<Vec<_>>()
        }
    };
    assert_eq!(tags(filter(Some("ärg"), None)).await, [id(40)]);
    assert_eq!(tags(filter(None, Some(2))).await, [id(41)]);
}
