//! The `rules` stage of the request pipeline. It runs after access and OpenAPI and before
//! detection, so that an `allow` or a `skip` takes effect on detection of the same request.
//!
//! Matching rules act in rule order: `tag` and `skip` accumulate into the [`Context`];
//! `monitor` records a reason; the first `block` or `allow` ends the evaluation. Head rules
//! (that read nothing of the body) decide in the head phase; rules that read the body decide in
//! the body phase, after every head rule. Once a rule allowed the request, no rule runs again.

use std::cell::RefCell;

use palisade_core::{Context, Reason, RequestView, Stage, Verdict};

use crate::compile::{Phase, Rules};
use crate::eval::Scratch;
use crate::model::Action;

#[cfg(test)]
mod tests;

thread_local! {
    static SCRATCH: RefCell<(Scratch, Vec<u32>)> = RefCell::new((Scratch::default(), Vec::new()));
}

#[derive(Debug)]
pub struct RulesStage {
    rules: Rules,
}

impl RulesStage {
    pub fn new(rules: Rules) -> Self {
        RulesStage { rules }
    }

    pub fn rules(&self) -> &Rules {
        &self.rules
    }

    /// The indexes of the rules that match `req` in `phase`, in order (every one, not only up
    /// to the first that ends evaluation).
    pub fn matching(&self, req: &RequestView<'_>, cx: &Context, phase: Phase, out: &mut Vec<u32>) {
        SCRATCH.with(|cell| match cell.try_borrow_mut() {
            Ok(mut g) => self.rules.program(phase).matching(req, cx, &mut g.0, out),
            Err(_) => self.rules.program(phase).matching(req, cx, &mut Scratch::default(), out),
        })
    }

    fn decide(&self, req: &RequestView<'_>, cx: &mut Context, phase: Phase) -> Verdict {
        if cx.allowed_by.is_some() || self.rules.program(phase).is_empty() {
            return Verdict::Allow;
        }
        SCRATCH.with(|cell| match cell.try_borrow_mut() {
            Ok(mut g) => {
                let (scratch, hits) = &mut *g;
                hits.clear();
                self.rules.program(phase).matching(req, cx, scratch, hits);
                self.apply(hits, cx)
            }
            Err(_) => {
                let mut hits = Vec::new();
                self.rules.program(phase).matching(req, cx, &mut Scratch::default(), &mut hits);
                self.apply(&hits, cx)
            }
        })
    }

    /// Apply the matching rules in order.
    fn apply(&self, hits: &[u32], cx: &mut Context) -> Verdict {
        let mut monitored = Vec::new();
        for &i in hits {
            let rule = &self.rules.rules[i as usize];
            let fx = &self.rules.effects[i as usize];
            cx.tags.extend(rule.tags.iter().cloned());
            cx.exclusions.extend(fx.exclusions.iter().cloned());
            let reason = || {
                let r = Reason::new(fx.code.clone());
                match &rule.name {
                    Some(n) => r.detail(n.clone()),
                    None => r,
                }
            };
            match rule.action {
                Action::Block(status) => {
                    return Verdict::Block { status, reasons: vec![reason()] };
                }
                Action::Allow => {
                    cx.allowed_by = Some(rule.id.clone());
                    break;
                }
                Action::Monitor => monitored.push(reason()),
                Action::None => {}
            }
        }
        if monitored.is_empty() {
            Verdict::Allow
        } else {
            Verdict::Monitor { reasons: monitored }
        }
    }
}

impl Stage for RulesStage {
    fn name(&self) -> &'static str {
        "rules"
    }

    fn check_head(&self, req: &RequestView<'_>, cx: &mut Context) -> Verdict {
        self.decide(req, cx, Phase::Head)
    }

    fn wants_body(&self) -> bool {
        self.rules.needs_body()
    }

    fn check_body(&self, req: &RequestView<'_>, cx: &mut Context) -> Verdict {
        self.decide(req, cx, Phase::Body)
    }
}
