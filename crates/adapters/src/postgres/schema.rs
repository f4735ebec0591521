// @generated automatically by Diesel CLI.

diesel::table! {
    api_keys (id) {
        id -> Uuid,
        workspace_id -> Uuid,
        user_id -> Uuid,
        name -> Nullable<Text>,
        key_prefix -> Text,
        key_hash -> Bytea,
        created_at -> Timestamptz,
        revoked_at -> Nullable<Timestamptz>,
        last_used_at -> Nullable<Timestamptz>,
        scopes -> Nullable<Array<Nullable<Text>>>,
        expires_at -> Nullable<Timestamptz>,
    }
}

diesel::table! {
    audit_log (id) {
        id -> Int8,
        workspace_id -> Uuid,
        actor_user_id -> Nullable<Uuid>,
        action -> Text,
        target_type -> Text,
        target_id -> Text,
        reason -> Nullable<Text>,
        created_at -> Timestamptz,
    }
}

diesel::table! {
    clients (id) {
        id -> Uuid,
        workspace_id -> Uuid,
        name -> Text,
        name_lower -> Text,
        #[sql_name = "type"]
        type_ -> Text,
        status -> Text,
        email -> Nullable<Text>,
        phone -> Nullable<Text>,
        address -> Nullable<Text>,
        note -> Nullable<Text>,
        currency -> Text,
        created_at -> Timestamptz,
        updated_at -> Timestamptz,
    }
}

diesel::table! {
    deliveries (id) {
        event_id -> Uuid,
        subscription_id -> Text,
        workspace_id -> Uuid,
        status -> Text,
        attempts -> Int4,
        next_attempt_at -> Timestamptz,
        last_status_code -> Nullable<Int4>,
        last_error -> Nullable<Text>,
        created_at -> Timestamptz,
        updated_at -> Timestamptz,
        id -> Int8,
        kind -> Text,
        ordering_key -> Nullable<Text>,
        sequence -> Nullable<Int8>,
        not_before -> Nullable<Timestamptz>,
    }
}

diesel::table! {
    delivery_leases (delivery_id, workspace_id) {
        delivery_id -> Int8,
        workspace_id -> Uuid,
        subscription_id -> Text,
        due_at -> Timestamptz,
        expires_at -> Timestamptz,
    }
}

diesel::table! {
    delivery_attempts (id) {
        id -> Int8,
        subscription_id -> Text,
        attempt -> Int4,
        started_at -> Timestamptz,
        latency_ms -> Int4,
        status_code -> Nullable<Int4>,
        error -> Nullable<Text>,
        response_excerpt -> Nullable<Text>,
        response_excerpt_lossy -> Bool,
        delivery_id -> Int8,
        is_test -> Bool,
        workspace_id -> Uuid,
        signature -> Nullable<Text>,
        custom_headers -> Nullable<Text>,
    }
}

diesel::table! {
    events (id) {
        id -> Uuid,
        workspace_id -> Uuid,
        event_type -> Text,
        body -> Text,
        created_at -> Timestamptz,
        about_webhook_id -> Nullable<Text>,
        project_id -> Nullable<Uuid>,
        client_id -> Nullable<Uuid>,
        user_id -> Nullable<Uuid>,
        billable -> Nullable<Bool>,
        seq -> Int8,
        txid -> Int8,
        ordering_key -> Nullable<Text>,
        visible_to -> Nullable<Uuid>,
        sent_as -> Nullable<Text>,
    }
}

diesel::table! {
    idempotency_keys (api_key_id, key) {
        api_key_id -> Uuid,
        key -> Text,
        fingerprint -> Bytea,
        status -> Nullable<Int4>,
        body -> Nullable<Text>,
        created_at -> Timestamptz,
        workspace_id -> Uuid,
    }
}

diesel::table! {
    memberships (workspace_id, user_id) {
        workspace_id -> Uuid,
        user_id -> Uuid,
        created_at -> Timestamptz,
        role -> Text,
        updated_at -> Timestamptz,
    }
}

diesel::table! {
    projects (id) {
        id -> Uuid,
        workspace_id -> Uuid,
        client_id -> Nullable<Uuid>,
        name -> Text,
        created_at -> Timestamptz,
        updated_at -> Timestamptz,
    }
}

diesel::table! {
    rate_limit_hits (id) {
        id -> Int8,
        key -> Text,
        at -> Timestamptz,
    }
}

diesel::table! {
    rates (id) {
        id -> Uuid,
        workspace_id -> Uuid,
        kind -> Text,
        scope -> Text,
        user_id -> Nullable<Uuid>,
        client_id -> Nullable<Uuid>,
        project_id -> Nullable<Uuid>,
        task_id -> Nullable<Uuid>,
        currency -> Text,
        hourly_minor -> Int8,
        effective_from -> Date,
        created_at -> Timestamptz,
    }
}

diesel::table! {
    tags (id) {
        id -> Uuid,
        workspace_id -> Uuid,
        name -> Text,
        name_lower -> Text,
        created_at -> Timestamptz,
    }
}

diesel::table! {
    tasks (id) {
        id -> Uuid,
        workspace_id -> Uuid,
        project_id -> Uuid,
        name -> Text,
        created_at -> Timestamptz,
        updated_at -> Timestamptz,
    }
}

diesel::table! {
    time_entries (id) {
        id -> Uuid,
        workspace_id -> Uuid,
        user_id -> Uuid,
        source -> Text,
        description -> Text,
        project_id -> Nullable<Uuid>,
        task_id -> Nullable<Uuid>,
        billable -> Bool,
        start_at -> Timestamptz,
        end_at -> Nullable<Timestamptz>,
        created_at -> Timestamptz,
        updated_at -> Timestamptz,
        price_currency -> Nullable<Text>,
        billable_rate_id -> Nullable<Uuid>,
        billable_rate_scope -> Nullable<Text>,
        billable_rate_minor -> Nullable<Int8>,
        cost_rate_id -> Nullable<Uuid>,
        cost_rate_scope -> Nullable<Text>,
        cost_rate_minor -> Nullable<Int8>,
        invoice_id -> Nullable<Uuid>,
    }
}

diesel::table! {
    time_entry_tags (time_entry_id, tag_id) {
        workspace_id -> Uuid,
        time_entry_id -> Uuid,
        tag_id -> Uuid,
    }
}

diesel::table! {
    users (id) {
        id -> Uuid,
        name -> Text,
        email -> Text,
        created_at -> Timestamptz,
    }
}

diesel::table! {
    webhook_subscriptions (id) {
        id -> Text,
        workspace_id -> Uuid,
        user_id -> Uuid,
        api_key_id -> Uuid,
        url -> Text,
        events -> Array<Nullable<Text>>,
        description -> Nullable<Text>,
        secret -> Text,
        status -> Text,
        created_at -> Timestamptz,
        updated_at -> Timestamptz,
        failing_since -> Nullable<Timestamptz>,
        streak_reset_at -> Nullable<Timestamptz>,
        previous_secret -> Nullable<Text>,
        previous_secret_expires_at -> Nullable<Timestamptz>,
        failing_notified_at -> Nullable<Timestamptz>,
        filter_project_ids -> Nullable<Array<Nullable<Uuid>>>,
        filter_client_ids -> Nullable<Array<Nullable<Uuid>>>,
        filter_user_ids -> Nullable<Array<Nullable<Uuid>>>,
        filter_billable -> Nullable<Bool>,
        failing_attempts -> Int4,
        recovered_at -> Nullable<Timestamptz>,
        disabled_reason -> Nullable<Text>,
        headers -> Nullable<Text>,
    }
}

diesel::table! {
    workspaces (id) {
        id -> Uuid,
        name -> Text,
        timezone -> Text,
        currency -> Text,
        created_at -> Timestamptz,
        members_manage_catalog -> Bool,
        members_see_rates -> Bool,
        rounding_minutes -> Int2,
        rounding_mode -> Text,
        invoice_number_pattern -> Text,
        payment_terms_days -> Int2,
        lock_before -> Nullable<Date>,
    }
}

diesel::joinable!(clients -> workspaces (workspace_id));
diesel::joinable!(deliveries -> events (event_id));
diesel::joinable!(deliveries -> webhook_subscriptions (subscription_id));
diesel::joinable!(delivery_attempts -> deliveries (delivery_id));
diesel::joinable!(events -> workspaces (workspace_id));
diesel::joinable!(idempotency_keys -> api_keys (api_key_id));
diesel::joinable!(memberships -> users (user_id));
diesel::joinable!(memberships -> workspaces (workspace_id));
diesel::joinable!(projects -> workspaces (workspace_id));
diesel::joinable!(rates -> workspaces (workspace_id));
diesel::joinable!(tags -> workspaces (workspace_id));
diesel::joinable!(webhook_subscriptions -> api_keys (api_key_id));

diesel::allow_tables_to_appear_in_same_query!(
    api_keys,
    audit_log,
    clients,
    deliveries,
    delivery_attempts,
    delivery_leases,
    events,
    idempotency_keys,
    memberships,
    projects,
    rate_limit_hits,
    rates,
    tags,
    tasks,
    time_entries,
    time_entry_tags,
    users,
    webhook_subscriptions,
    workspaces,
);
