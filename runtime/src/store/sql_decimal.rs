//! [`SqlDecimal`]: an exact decimal number a statement binds (`numeric` on Postgres, text on
//! SQLite), kept as its digits so that no amount passes through a float.

use std::fmt;
use std::str::FromStr;

/// An exact decimal number, such as `"-1234.50"`: what a [`SqlValue::Decimal`](super::SqlValue::Decimal)
/// binds. Postgres receives it as `numeric` (every digit and the scale kept: `12.50`
/// stays `12.50`); SQLite, which has no exact decimal type, as the text `"12.50"`.
///
/// ```
/// # use toolgate_runtime::store::{SqlDecimal, SqlValue};
/// let amount: SqlDecimal = "125.00".parse().unwrap();
/// let param: SqlValue = amount.into();
/// assert!("12,5".parse::<SqlDecimal>().is_err());
/// ```
#[derive(Debug, Clone, PartialEq, Eq, Hash)]
pub struct SqlDecimal {
    negative: bool,
    /// The digits before the point, without leading zeros (empty for zero).
    whole: String,
    /// The digits after the point, as written (their count is the scale).
    fraction: String,
}

/// Why a text is not a [`SqlDecimal`].
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[error("`{0}` is not a decimal number (digits, at most one `.`, an optional leading `-`)")]
pub struct NotADecimal(String);

/// The most digits a decimal may have: Postgres's `numeric` holds far more, but a value a
/// model or a user typed is not that long, and the bound keeps its encoding small.
const MAX_DIGITS: usize = 1000;

impl FromStr for SqlDecimal {
    type Err = NotADecimal;

    fn from_str(text: &str) -> Result<Self, NotADecimal> {
        let refused = || NotADecimal(text.chars().take(40).collect());
        let (negative, digits) = match text.strip_prefix('-') {
            Some(rest) => (true, rest),
            None => (false, text.strip_prefix('+').unwrap_or(text)),
        };
        let (whole, fraction) = digits.split_once('.').unwrap_or((digits, ""));
        let all_digits = |part: &str| part.bytes().all(|b| b.is_ascii_digit());
        if (whole.is_empty() && fraction.is_empty())
            || !all_digits(whole)
            || !all_digits(fraction)
            || digits.len() > MAX_DIGITS
        {
            return Err(refused());
        }
        let whole = whole.trim_start_matches('0').to_string();
        let zero = whole.is_empty() && fraction.bytes().all(|b| b == b'0');
        Ok(Self { negative: negative && !zero, whole, fraction: fraction.to_string() })
    }
}

impl fmt::Display for SqlDecimal {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        if self.negative {
            f.write_str("-")?;
        }
        f.write_str(if self.whole.is_empty() { "0" } else { &self.whole })?;
        if !self.fraction.is_empty() {
            write!(f, ".{}", self.fraction)?;
        }
        Ok(())
    }
}

impl From<u64> for SqlDecimal {
    fn from(value: u64) -> Self {
        value.to_string().parse().expect("an integer's digits are a decimal")
    }
}

impl From<i64> for SqlDecimal {
    fn from(value: i64) -> Self {
        value.to_string().parse().expect("an integer's digits are a decimal")
    }
}

/// A decimal as Postgres's `numeric` spells it on the wire: base-10000 digits, the weight
/// of the first, the sign and the display scale.
#[cfg_attr(not(feature = "postgres"), allow(dead_code))]
pub(crate) struct NumericParts {
    pub(crate) digits: Vec<i16>,
    pub(crate) weight: i16,
    pub(crate) negative: bool,
    pub(crate) scale: u16,
}

#[cfg_attr(not(feature = "postgres"), allow(dead_code))]
impl SqlDecimal {
    /// Its `numeric` parts: the whole part padded left and the fraction padded right to
    /// groups of four digits; zero groups at either end dropped (the weight says where
    /// the first kept group sits).
    pub(crate) fn numeric_parts(&self) -> NumericParts {
        let pad_left = (4 - self.whole.len() % 4) % 4;
        let pad_right = (4 - self.fraction.len() % 4) % 4;
        let whole = format!("{}{}", "0".repeat(pad_left), self.whole);
        let fraction = format!("{}{}", self.fraction, "0".repeat(pad_right));
        let group = |chunk: &[u8]| chunk.iter().fold(0i16, |n, b| n * 10 + i16::from(b - b'0'));
        let whole_groups: Vec<i16> = whole.as_bytes().chunks(4).map(group).collect();
        let mut digits: Vec<i16> =
            whole_groups.iter().copied().chain(fraction.as_bytes().chunks(4).map(group)).collect();
        let mut weight = whole_groups.len() as i32 - 1;
        let leading = digits.iter().take_while(|&&d| d == 0).count();
        digits.drain(..leading);
        weight -= leading as i32;
        while digits.last() == Some(&0) {
            digits.pop();
        }
        if digits.is_empty() {
            weight = 0;
        }
        NumericParts {
            digits,
            weight: weight.clamp(i16::MIN.into(), i16::MAX.into()) as i16,
            negative: self.negative,
            scale: self.fraction.len() as u16,
        }
    }

    /// The decimal `numeric` parts spell, as text (the caller reads `NaN` and the
    /// infinities, which are not decimals, from the sign word first).
    pub(crate) fn from_numeric_parts(parts: &NumericParts) -> String {
        let digit =
            |index: i32| -> i16 { usize::try_from(index).ok().and_then(|i| parts.digits.get(i)).copied().unwrap_or(0) };
        let mut text = String::new();
        if parts.negative {
            text.push('-');
        }
        if parts.weight < 0 {
            text.push('0');
        } else {
            text.push_str(&digit(0).to_string());
            for index in 1..=i32::from(parts.weight) {
                text.push_str(&format!("{:04}", digit(index)));
            }
        }
        if parts.scale > 0 {
            text.push('.');
            let mut fraction = String::new();
            let mut index = i32::from(parts.weight) + 1;
            while fraction.len() < usize::from(parts.scale) {
                fraction.push_str(&format!("{:04}", digit(index)));
                index += 1;
            }
            fraction.truncate(usize::from(parts.scale));
            text.push_str(&fraction);
        }
        text
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn round_trip(text: &str) -> String {
        SqlDecimal::from_numeric_parts(&text.parse::<SqlDecimal>().unwrap().numeric_parts())
    }

    #[test]
    fn numeric_parts_say_the_same_decimal_back() {
        for (written, read) in [
            ("0", "0"),
            ("-0.00", "0.00"),
            ("12.50", "12.50"),
            ("-1234.5", "-1234.5"),
            ("10000", "10000"),
            ("0.0001", "0.0001"),
            ("0.00000123", "0.00000123"),
            ("123456789.987654321", "123456789.987654321"),
            ("18446744073709551615", "18446744073709551615"),
            ("007.10", "7.10"),
            (".5", "0.5"),
        ] {
            assert_eq!(round_trip(written), read, "{written}");
        }
    }

    #[test]
    fn what_is_not_a_decimal_is_refused() {
        for text in ["", "-", ".", "1.2.3", "1e5", "12,5", "NaN", "١٢", " 1"] {
            assert!(text.parse::<SqlDecimal>().is_err(), "{text:?}");
        }
    }

    #[test]
    fn numeric_parts_are_postgres_s() {
        let parts = "-1234.50".parse::<SqlDecimal>().unwrap().numeric_parts();
        assert_eq!((parts.digits, parts.weight, parts.negative, parts.scale), (vec![1234, 5000], 0, true, 2));
        let parts = "0.00001".parse::<SqlDecimal>().unwrap().numeric_parts();
        assert_eq!((parts.digits, parts.weight, parts.scale), (vec![1000], -2, 5));
    }
}
