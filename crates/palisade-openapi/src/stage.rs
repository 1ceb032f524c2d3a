//! The OpenAPI stage of the request pipeline: a [`Judge`] that can be swapped while requests
//! are in flight (a refreshed spec), driven through [`palisade_core::Stage`]. In the head phase
//! it records the matched operation in the [`Context`] (`operation`) for the stages after it.

use std::sync::Arc;

use arc_swap::ArcSwap;
use palisade_core::{Context, RequestView, ResponseView, Stage, Verdict};

use crate::judge::{Judge, Phase};

pub struct OpenApiStage {
    judge: ArcSwap<Judge>,
    wants_body: bool,
    wants_response: bool,
}

impl OpenApiStage {
    pub fn new(judge: Judge) -> Self {
        let (wants_body, wants_response) = (judge.wants_body(), judge.wants_response());
        OpenApiStage { judge: ArcSwap::from_pointee(judge), wants_body, wants_response }
    }

    /// A stage on a judge another stage may share (a reload that found the spec unchanged).
    pub fn shared(judge: Arc<Judge>) -> Self {
        let (wants_body, wants_response) = (judge.wants_body(), judge.wants_response());
        OpenApiStage { judge: ArcSwap::new(judge), wants_body, wants_response }
    }

    /// Swap in a new judge (a refreshed spec); requests being judged finish on the old one.
    pub fn replace(&self, judge: Judge) {
        self.judge.store(Arc::new(judge));
    }

    pub fn current(&self) -> Arc<Judge> {
        self.judge.load_full()
    }

    fn judge(&self, req: &RequestView<'_>, phase: Phase, cx: &mut Context) -> Verdict {
        let judge = self.judge.load();
        let mut findings = Vec::new();
        let granted = cx.identity.jwt_verified.then_some(cx.identity.scopes.as_slice());
        let op = judge.check_request_granted(req, phase, granted, &mut findings);
        if phase == Phase::Head {
            // The matched operation, for the stages after this one (detection policy, rules).
            cx.operation = op.map(|i| judge.operation_name(i).clone());
        } else {
            // The strings the spec settles in a valid body, which detection need not inspect.
            cx.settled = if findings.is_empty() { Judge::settled_strings(req.body) } else { None };
        }
        judge.verdict(&findings)
    }
}

impl Stage for OpenApiStage {
    fn name(&self) -> &'static str {
        "openapi"
    }

    fn check_head(&self, req: &RequestView<'_>, cx: &mut Context) -> Verdict {
        self.judge(req, Phase::Head, cx)
    }

    fn wants_body(&self) -> bool {
        self.wants_body
    }

    fn check_body(&self, req: &RequestView<'_>, cx: &mut Context) -> Verdict {
        self.judge(req, Phase::Body, cx)
    }

    fn wants_response(&self) -> bool {
        self.wants_response
    }

    fn check_response(&self, req: &RequestView<'_>, resp: &ResponseView<'_>, _cx: &Context) -> Verdict {
        let judge = self.judge.load();
        let mut findings = Vec::new();
        judge.check_response(req, resp, &mut findings);
        judge.verdict(&findings)
    }
}
