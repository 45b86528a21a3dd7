//! Applying the faults a plan drew: latency, dropped requests, denials, replicated write
//! conflicts, throttling and 500s before the request is forwarded; dropped, reset or delayed
//! answers after it.

use std::time::Duration;

use crate::config::FaultConfig;
use crate::http1::Reply;
use crate::journal::Delivery;
use crate::plan::Plan;
use crate::shared::Shared;
use crate::stats;

/// Counts `outcome` and answers with a DynamoDB error instead of forwarding.
fn refuse(sh: &Shared, op: &str, outcome: &str, status: u16, short_type: &str, why: &str) -> Reply {
    sh.counters.add(op, outcome);
    Reply::Send(sh.ddb_error(status, short_type, &format!("fault-proxy: {why}")))
}

/// Waits out the latency, then the faults that stop the request before the upstream:
/// `Some(reply)` if one applies.
pub(crate) async fn before_forward(
    sh: &Shared,
    cfg: &FaultConfig,
    plan: &Plan,
    op: &str,
) -> Option<Reply> {
    let delay = cfg.latency_ms + plan.extra_latency_ms;
    if delay > 0 && plan.latency {
        tokio::time::sleep(Duration::from_millis(delay)).await;
    }
    if plan.drop_request {
        sh.counters.add(op, stats::DROPPED_REQUEST);
        return Some(Reply::Close);
    }
    if plan.access_denied {
        return Some(refuse(
            sh,
            op,
            stats::ACCESS_DENIED,
            400,
            "AccessDeniedException",
            "injected denial (deny_ops): the caller's policy does not allow this action",
        ));
    }
    if plan.replicated_conflict {
        return Some(refuse(
            sh,
            op,
            stats::REPLICATED_CONFLICT,
            400,
            "ReplicatedWriteConflictException",
            "injected replicated write conflict: one or more items in the request are being \
             modified by a request in another Region",
        ));
    }
    if plan.throttle {
        return Some(refuse(
            sh,
            op,
            stats::THROTTLED,
            400,
            "ProvisionedThroughputExceededException",
            "injected throttling (throttle_rate)",
        ));
    }
    if plan.error500 {
        return Some(refuse(
            sh,
            op,
            stats::ERROR_500,
            500,
            "InternalServerError",
            "injected internal server error (error_500_rate)",
        ));
    }
    None
}

/// What the client will get for the forwarded request, as the journal says it.
pub(crate) fn delivery(plan: &Plan) -> Delivery {
    if plan.drop {
        Delivery::Dropped
    } else if plan.reset {
        Delivery::Reset
    } else if plan.delay_response {
        Delivery::Delayed
    } else {
        Delivery::Answered
    }
}

/// The faults on the answer of a forwarded request: `Some(reply)` if the answer is lost
/// (dropped or reset); a delayed answer waits here.
pub(crate) async fn after_forward(
    sh: &Shared,
    cfg: &FaultConfig,
    plan: &Plan,
    op: &str,
) -> Option<Reply> {
    match delivery(plan) {
        Delivery::Dropped => {
            sh.counters.add(op, stats::DROPPED);
            Some(Reply::Close)
        }
        Delivery::Reset => {
            sh.counters.add(op, stats::RESET);
            Some(Reply::Reset)
        }
        Delivery::Delayed => {
            sh.counters.add(op, stats::DELAYED);
            tokio::time::sleep(Duration::from_millis(cfg.delay_response_ms)).await;
            None
        }
        Delivery::Answered | Delivery::Unreachable | Delivery::NotForwarded => None,
    }
}
