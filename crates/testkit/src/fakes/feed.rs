//! The catch-up feed's reads: every write commits at once here, so the horizon is past every
//! event.

use super::*;

impl Tables {
    /// `workspace`'s events of `types` that `viewer` may see, with their places, in feed order.
    fn feed(
        &self,
        workspace: WorkspaceId,
        viewer: UserId,
        types: &[EventType],
    ) -> Vec<(FeedPosition, &Event)> {
        let mut shown: Vec<(FeedPosition, &Event)> = self
            .events
            .iter()
            .filter(|e| e.workspace_id == workspace && types.contains(&e.event_type))
            .filter_map(|e| {
                let (position, visible_to) = self.placed.get(&e.id)?;
                visible_to
                    .is_none_or(|owner| owner == viewer)
                    .then_some((*position, e))
            })
            .collect();
        shown.sort_by_key(|(position, _)| *position);
        shown
    }
}

fn feed_event((position, event): (FeedPosition, &Event)) -> FeedEvent {
    FeedEvent {
        id: event.id,
        event_type: event.event_type,
        created_at: event.created_at,
        body: event.body.clone(),
        position,
    }
}

#[async_trait]
impl EventFeed for InMemoryStore {
    async fn read(
        &self,
        workspace: WorkspaceId,
        viewer: UserId,
        after: FeedPosition,
        types: &[EventType],
        limit: u32,
    ) -> DomainResult<FeedRead> {
        let t = self.tables();
        let events = t
            .feed(workspace, viewer, types)
            .into_iter()
            .filter(|(position, _)| *position > after)
            .take(limit as usize)
            .map(feed_event)
            .collect();
        Ok(FeedRead {
            events,
            horizon: FeedPosition {
                txid: t.transactions + 1,
                seq: 0,
            },
        })
    }

    async fn read_back(
        &self,
        workspace: WorkspaceId,
        viewer: UserId,
        before: FeedPosition,
        types: &[EventType],
        limit: u32,
    ) -> DomainResult<Vec<FeedEvent>> {
        let t = self.tables();
        Ok(t.feed(workspace, viewer, types)
            .into_iter()
            .rev()
            .filter(|(position, _)| *position < before)
            .take(limit as usize)
            .map(feed_event)
            .collect())
    }
}
