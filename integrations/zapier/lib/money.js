'use strict';

// Money in timetrack is integer minor units of a currency (`totalMinor: 21420` with `currency:
// "USD"`). A Zap's formatter, spreadsheet or accounting step wants the amount itself, so every
// object the app answers that has a `currency` also gets, beside each `...Minor` or `..._minor`
// integer, the amount as a decimal string in that currency (`total: "214.20"`), computed exactly
// (no floating point).

/** Digits after the point where a currency does not have two (ISO 4217). */
const EXPONENTS = {
  BIF: 0, CLP: 0, DJF: 0, GNF: 0, ISK: 0, JPY: 0, KMF: 0, KRW: 0, PYG: 0, RWF: 0, UGX: 0,
  UYI: 0, VND: 0, VUV: 0, XAF: 0, XOF: 0, XPF: 0,
  BHD: 3, IQD: 3, JOD: 3, KWD: 3, LYD: 3, OMR: 3, TND: 3,
  CLF: 4, UYW: 4,
};

/** The digits after the point of `currency`. */
const exponentOf = (currency) => (currency in EXPONENTS ? EXPONENTS[currency] : 2);

/** `minor` units of `currency` as a decimal string: `21420, "USD"` -> `"214.20"`. */
const decimal = (minor, currency) => {
  const exponent = exponentOf(currency);
  const units = BigInt(minor);
  const negative = units < 0n;
  const digits = (negative ? -units : units).toString().padStart(exponent + 1, '0');
  const whole = exponent === 0 ? digits : digits.slice(0, -exponent);
  const fraction = exponent === 0 ? '' : `.${digits.slice(-exponent)}`;
  return `${negative ? '-' : ''}${whole}${fraction}`;
};

/** The key of a minor-unit field's decimal twin: `totalMinor` -> `total`, `rate_minor` -> `rate`. */
const decimalKey = (key) => {
  const m = /^(.+?)(?:_minor|Minor)$/.exec(key);
  return m ? m[1] : null;
};

/** `value` with a decimal twin beside every minor-unit integer of an object that has a currency. */
const withDecimals = (value) => {
  if (Array.isArray(value)) {
    return value.map(withDecimals);
  }
  if (value === null || typeof value !== 'object') {
    return value;
  }
  const out = {};
  const currency = typeof value.currency === 'string' ? value.currency : null;
  for (const [key, inner] of Object.entries(value)) {
    out[key] = withDecimals(inner);
    const twin = decimalKey(key);
    if (currency && twin && Number.isInteger(inner) && !(twin in value)) {
      out[twin] = decimal(inner, currency);
    }
  }
  return out;
};

module.exports = { decimal, decimalKey, withDecimals };
