//! What a call cost, for models whose list price is known. Prices are US dollars per million
//! tokens (input, output), from the providers' public price lists; a model not listed has no
//! cost (the trace then shows tokens only). Names match by prefix, so dated snapshots
//! (`gpt-4o-mini-2024-07-18`) take their family's price.

use crate::provider::{ModelRef, TokenUsage};

/// (provider, model name prefix, $/M input, $/M output). Longer prefixes first.
const PRICES: &[(&str, &str, f64, f64)] = &[
    ("openai", "gpt-4o-mini", 0.15, 0.60),
    ("openai", "gpt-4o", 2.50, 10.00),
    ("openai", "gpt-4.1-nano", 0.10, 0.40),
    ("openai", "gpt-4.1-mini", 0.40, 1.60),
    ("openai", "gpt-4.1", 2.00, 8.00),
    ("openai", "o4-mini", 1.10, 4.40),
    ("openai", "o3-mini", 1.10, 4.40),
    ("openai", "o3", 2.00, 8.00),
    ("anthropic", "claude-3-5-haiku", 0.80, 4.00),
    ("anthropic", "claude-3-5-sonnet", 3.00, 15.00),
    ("anthropic", "claude-3-7-sonnet", 3.00, 15.00),
    ("anthropic", "claude-sonnet-4", 3.00, 15.00),
    ("anthropic", "claude-opus-4", 15.00, 75.00),
    ("anthropic", "claude-haiku-4", 1.00, 5.00),
];

/// The provider family a configured provider name belongs to for pricing (`claude` is
/// Anthropic; OpenAI-compatible local servers have no price).
fn family(provider: &str) -> &str {
    match provider {
        "claude" | "anthropic" => "anthropic",
        "openai" => "openai",
        other => other,
    }
}

/// The cost of a call in US dollars, when the model's price is known.
pub fn cost_usd(model: &ModelRef, usage: TokenUsage) -> Option<f64> {
    let fam = family(&model.provider);
    let (_, _, inp, out) = PRICES.iter().find(|(p, prefix, _, _)| *p == fam && model.name.starts_with(prefix))?;
    Some((usage.input_tokens as f64 * inp + usage.output_tokens as f64 * out) / 1_000_000.0)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn known_models_are_priced_by_family_prefix() {
        let u = TokenUsage { input_tokens: 1_000_000, output_tokens: 1_000_000 };
        let m = |p: &str, n: &str| ModelRef { provider: p.into(), name: n.into() };
        assert_eq!(cost_usd(&m("openai", "gpt-4o-mini-2024-07-18"), u), Some(0.75));
        assert_eq!(cost_usd(&m("openai", "gpt-4o"), u), Some(12.5));
        assert_eq!(cost_usd(&m("claude", "claude-3-5-haiku-latest"), u), Some(4.8));
        assert_eq!(cost_usd(&m("ollama", "llama3"), u), None);
        assert_eq!(cost_usd(&m("openai", "my-finetune"), u), None);
    }
}
