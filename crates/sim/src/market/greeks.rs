//! What an option's ticker and trades carry besides prices: implied volatilities and greeks.
//!
//! Owns: the model, Black–Scholes on the index with no interest rate (the simulator reports
//! `underlying_index: "index_price"` and `interest_rate: 0`), and Deribit's units: volatility
//! in percent, vega per volatility point, theta per day, rho per rate point, all in USD per
//! option; premiums of inverse options (quoted in the coin) are converted at the underlying.
//! An implied volatility inverts the model on a price (the mark, a best bid or ask, a trade);
//! the greeks are taken at the mark's implied volatility.
//! Must not: price orders or touch the exchange. These are model outputs for display, so they
//! are `f64` and rounded when rendered; no order value passes through here.

use ticktrade_core::Decimal;
use ticktrade_deribit_proto::api::{self, Num};

const YEAR_MS: f64 = 365.0 * 86_400_000.0;
/// Bounds of the implied-volatility search (0.01 % to 2000 %).
const VOL_MIN: f64 = 1e-4;
const VOL_MAX: f64 = 20.0;

/// One option at one moment.
#[derive(Clone, Copy, Debug)]
pub struct OptionInputs {
    /// The underlying's price in USD (the index).
    pub underlying: f64,
    pub strike: f64,
    /// Time to expiry in years, at least a minute so the model stays defined at expiry.
    pub years: f64,
    pub call: bool,
    /// Quoted in the coin (Deribit's BTC and ETH options) rather than in USD.
    pub inverse: bool,
}

/// The sensitivities in Deribit's units (see the module docs).
#[derive(Clone, Copy, Debug, PartialEq)]
pub struct Greeks {
    pub delta: f64,
    pub gamma: f64,
    pub vega: f64,
    pub theta: f64,
    pub rho: f64,
}

fn norm_cdf(x: f64) -> f64 {
    0.5 * libm::erfc(-x / std::f64::consts::SQRT_2)
}

fn norm_pdf(x: f64) -> f64 {
    (-0.5 * x * x).exp() / (2.0 * std::f64::consts::PI).sqrt()
}

impl OptionInputs {
    pub fn new(underlying: f64, strike: f64, now_ms: i64, expiry_ms: i64, call: bool, inverse: bool) -> OptionInputs {
        let years = ((expiry_ms - now_ms) as f64 / YEAR_MS).max(60_000.0 / YEAR_MS);
        OptionInputs { underlying, strike, years, call, inverse }
    }

    fn d1_d2(&self, vol: f64) -> (f64, f64) {
        let sd = vol * self.years.sqrt();
        let d1 = ((self.underlying / self.strike).ln() + 0.5 * sd * sd) / sd;
        (d1, d1 - sd)
    }

    /// The model's premium in USD at volatility `vol` (a fraction: 0.6 is 60 %).
    pub fn premium_usd(&self, vol: f64) -> f64 {
        let (d1, d2) = self.d1_d2(vol);
        let (s, k) = (self.underlying, self.strike);
        if self.call { s * norm_cdf(d1) - k * norm_cdf(d2) } else { k * norm_cdf(-d2) - s * norm_cdf(-d1) }
    }

    /// The volatility (a fraction) at which the model gives `price` in the instrument's unit;
    /// `None` when no volatility does (a price under the intrinsic value, or none at all).
    pub fn implied_vol(&self, price: f64) -> Option<f64> {
        let target = if self.inverse { price * self.underlying } else { price };
        if !(target.is_finite() && target > 0.0 && self.underlying > 0.0 && self.strike > 0.0) {
            return None;
        }
        // The premium rises with volatility: bisect.
        let (mut low, mut high) = (VOL_MIN, VOL_MAX);
        if target < self.premium_usd(low) || target > self.premium_usd(high) {
            return None;
        }
        for _ in 0..100 {
            let mid = 0.5 * (low + high);
            if self.premium_usd(mid) < target {
                low = mid;
            } else {
                high = mid;
            }
        }
        Some(0.5 * (low + high))
    }

    pub fn greeks(&self, vol: f64) -> Greeks {
        let (d1, d2) = self.d1_d2(vol);
        let (s, k, t) = (self.underlying, self.strike, self.years);
        let sqrt_t = t.sqrt();
        let delta = if self.call { norm_cdf(d1) } else { norm_cdf(d1) - 1.0 };
        let rho = if self.call { k * t * norm_cdf(d2) } else { -k * t * norm_cdf(-d2) };
        Greeks {
            delta,
            gamma: norm_pdf(d1) / (s * vol * sqrt_t),
            vega: s * norm_pdf(d1) * sqrt_t / 100.0,
            theta: -s * norm_pdf(d1) * vol / (2.0 * sqrt_t) / 365.0,
            rho: rho / 100.0,
        }
    }
}

/// `value` rounded to `scale` decimals (0 when not finite).
pub fn num(value: f64, scale: u8) -> Num {
    let mantissa = (value * 10f64.powi(i32::from(scale))).round();
    if !mantissa.is_finite() || mantissa.abs() >= i64::MAX as f64 {
        return Num::ZERO;
    }
    Num(Decimal::new(mantissa as i64, scale).unwrap_or(Decimal::ZERO))
}

/// A volatility fraction as Deribit's percent with two decimals (0 when there is none).
pub fn iv_percent(vol: Option<f64>) -> Num {
    vol.map_or(Num::ZERO, |v| num(v * 100.0, 2))
}

/// The greeks as rendered, five decimals like Deribit's.
pub fn render_greeks(g: Greeks) -> api::Greeks {
    api::Greeks {
        delta: num(g.delta, 5),
        gamma: num(g.gamma, 5),
        vega: num(g.vega, 5),
        theta: num(g.theta, 5),
        rho: num(g.rho, 5),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    const DAY_MS: i64 = 86_400_000;

    fn call(strike: f64, days: i64) -> OptionInputs {
        OptionInputs::new(100.0, strike, 0, days * DAY_MS, true, false)
    }

    #[test]
    fn premium_matches_a_textbook_value() {
        // S = K = 100, one year, 20 %, r = 0: 7.9656 (Hull's tables; N(0.1) - N(-0.1)).
        let o = call(100.0, 365);
        assert!((o.premium_usd(0.2) - 7.965_567).abs() < 1e-5, "{}", o.premium_usd(0.2));
        // Put-call parity with no rate: C - P = S - K.
        let put = OptionInputs { call: false, ..call(90.0, 30) };
        let c = call(90.0, 30);
        assert!((c.premium_usd(0.5) - put.premium_usd(0.5) - 10.0).abs() < 1e-9);
    }

    #[test]
    fn implied_vol_inverts_the_premium_for_both_quote_units() {
        for (strike, days, vol) in [(80.0, 7, 0.3), (100.0, 30, 0.6), (130.0, 90, 1.2)] {
            let usd = call(strike, days);
            assert!((usd.implied_vol(usd.premium_usd(vol)).unwrap() - vol).abs() < 1e-9);
            let coin = OptionInputs { inverse: true, ..usd };
            let in_coin = coin.premium_usd(vol) / coin.underlying;
            assert!((coin.implied_vol(in_coin).unwrap() - vol).abs() < 1e-9);
        }
        // Under the intrinsic value (20 for a 80 call at 100) no volatility fits.
        assert_eq!(call(80.0, 30).implied_vol(19.0), None);
        assert_eq!(call(80.0, 30).implied_vol(0.0), None);
    }

    #[test]
    fn greeks_match_finite_differences() {
        let o = call(110.0, 60);
        let vol = 0.7;
        let g = o.greeks(vol);
        let h = 1e-3;
        let at = |s: f64| OptionInputs { underlying: s, ..o }.premium_usd(vol);
        let delta = (at(100.0 + h) - at(100.0 - h)) / (2.0 * h);
        let gamma = (at(100.0 + h) - 2.0 * at(100.0) + at(100.0 - h)) / (h * h);
        let vega = (o.premium_usd(vol + h) - o.premium_usd(vol - h)) / (2.0 * h) / 100.0;
        let day = 1.0 / 365.0;
        let theta = OptionInputs { years: o.years - day, ..o }.premium_usd(vol) - o.premium_usd(vol);
        assert!((g.delta - delta).abs() < 1e-6, "{g:?} {delta}");
        assert!((g.gamma - gamma).abs() < 1e-4, "{g:?} {gamma}");
        assert!((g.vega - vega).abs() < 1e-6, "{g:?} {vega}");
        assert!((g.theta - theta).abs() / theta.abs() < 0.02, "{g:?} {theta}");
        let put = OptionInputs { call: false, ..o }.greeks(vol);
        assert!((g.delta - put.delta - 1.0).abs() < 1e-12, "parity: call delta - put delta = 1");
        assert!(g.rho > 0.0 && put.rho < 0.0);
    }

    #[test]
    fn renders_deribit_units() {
        assert_eq!(iv_percent(Some(0.787_449)).to_string(), "78.74");
        assert_eq!(iv_percent(None), Num::ZERO);
        assert_eq!(num(-5.098_114, 5).to_string(), "-5.09811");
        assert_eq!(num(f64::NAN, 5), Num::ZERO);
    }
}
