/**
 * Published test material of RFC 8785 (JSON Canonicalization Scheme), copied from the RFC text.
 * https://www.rfc-editor.org/rfc/rfc8785
 */

/** Appendix B: IEEE-754 binary64 bit patterns (hex) and their canonical serialisation. */
export const APPENDIX_B_FINITE: ReadonlyArray<readonly [hex: string, expected: string]> = [
  ["0000000000000000", "0"], // zero
  ["8000000000000000", "0"], // minus zero
  ["0000000000000001", "5e-324"], // min positive
  ["8000000000000001", "-5e-324"], // min negative
  ["7fefffffffffffff", "1.7976931348623157e+308"], // max positive
  ["ffefffffffffffff", "-1.7976931348623157e+308"], // max negative
  ["4340000000000000", "9007199254740992"], // max positive integer
  ["c340000000000000", "-9007199254740992"], // max negative integer
  ["4430000000000000", "295147905179352830000"], // ~2**68
  ["44b52d02c7e14af5", "9.999999999999997e+22"],
  ["44b52d02c7e14af6", "1e+23"],
  ["44b52d02c7e14af7", "1.0000000000000001e+23"],
  ["444b1ae4d6e2ef4e", "999999999999999700000"],
  ["444b1ae4d6e2ef4f", "999999999999999900000"],
  ["444b1ae4d6e2ef50", "1e+21"],
  ["3eb0c6f7a0b5ed8c", "9.999999999999997e-7"],
  ["3eb0c6f7a0b5ed8d", "0.000001"],
  ["41b3de4355555553", "333333333.3333332"],
  ["41b3de4355555554", "333333333.33333325"],
  ["41b3de4355555555", "333333333.3333333"],
  ["41b3de4355555556", "333333333.3333334"],
  ["41b3de4355555557", "333333333.33333343"],
  ["becbf647612f3696", "-0.0000033333333333333333"],
  ["43143ff3c1cb0959", "1424953923781206.2"], // round to even
];

/** Appendix B: bit patterns a compliant implementation must reject (NaN, Infinity). */
export const APPENDIX_B_NON_FINITE: ReadonlyArray<readonly [hex: string, name: string]> = [
  ["7fffffffffffffff", "NaN"],
  ["7ff0000000000000", "Infinity"],
  ["fff0000000000000", "-Infinity"], // not in the table; the same rule applies
];

/** The double whose IEEE-754 bit pattern is `hex` (16 hex digits, big-endian). */
export function doubleFromHex(hex: string): number {
  const view = new DataView(new ArrayBuffer(8));
  view.setUint32(0, Number.parseInt(hex.slice(0, 8), 16));
  view.setUint32(4, Number.parseInt(hex.slice(8, 16), 16));
  return view.getFloat64(0);
}

/** Section 3.2.2: the input of the main example, as JSON text. */
export const MAIN_EXAMPLE_INPUT = String.raw`{
  "numbers": [333333333.33333329, 1E30, 4.50,
              2e-3, 0.000000000000000000000000001],
  "string": "\u20ac$\u000F\u000aA'\u0042\u0022\u005c\\\"\/",
  "literals": [null, true, false]
}`;

/** Section 3.2.4: its canonical form. */
export const MAIN_EXAMPLE_OUTPUT = String.raw`{"literals":[null,true,false],"numbers":[333333333.3333333,1e+30,4.5,0.002,1e-27],"string":"€$\u000f\nA'B\"\\\\\"/"}`;

/** Section 3.2.4: the UTF-8 bytes of that canonical form, as printed in the RFC. */
export const MAIN_EXAMPLE_UTF8_HEX = `
7b 22 6c 69 74 65 72 61 6c 73 22 3a 5b 6e 75 6c 6c 2c 74 72
75 65 2c 66 61 6c 73 65 5d 2c 22 6e 75 6d 62 65 72 73 22 3a
5b 33 33 33 33 33 33 33 33 33 2e 33 33 33 33 33 33 33 2c 31
65 2b 33 30 2c 34 2e 35 2c 30 2e 30 30 32 2c 31 65 2d 32 37
5d 2c 22 73 74 72 69 6e 67 22 3a 22 e2 82 ac 24 5c 75 30 30
30 66 5c 6e 41 27 42 5c 22 5c 5c 5c 5c 5c 22 2f 22 7d`;

/** Section 3.2.3: the sorting example, as JSON text. */
export const SORTING_EXAMPLE_INPUT = String.raw`{
  "\u20ac": "Euro Sign",
  "\r": "Carriage Return",
  "\ufb33": "Hebrew Letter Dalet With Dagesh",
  "1": "One",
  "\ud83d\ude00": "Emoji: Grinning Face",
  "\u0080": "Control",
  "\u00f6": "Latin Small Letter O With Diaeresis"
}`;

/** Section 3.2.3: the property values in the order the RFC prints after sorting. */
export const SORTING_EXAMPLE_ORDER = [
  "Carriage Return",
  "One",
  "Control",
  "Latin Small Letter O With Diaeresis",
  "Euro Sign",
  "Emoji: Grinning Face",
  "Hebrew Letter Dalet With Dagesh",
] as const;
