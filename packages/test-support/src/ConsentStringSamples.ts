/**
 * Consent strings that the IAB's libraries decode, made once with them (`@iabtechlabtcf/core`'s
 * `TCString.encode`, `@iabgpp/cmpapi`'s `GppModel` and `HeaderV1`) and kept as text, so a test
 * sends what a CMP would.
 */

/** A TCF v2 TC string (CMP 2, purposes 1 to 3, service-specific), with its publisher TC and disclosed vendors segments. */
export const TC_STRING = "CQdWToAQdWToAACABAENCCFgAOAAAAAAAAAAAAAAAAAA.IAAA.YAAAAAAAAAAA"

/** A GPP string with the US Privacy (6) and US national (7) sections. */
export const GPP_USP_USNAT = "DBABzw~1YNN~CUAAAAAAAACA.QA"

/** A GPP string with the TCF EU v2 (2) and US national (7) sections. */
export const GPP_TCFEU_USNAT = "DBACMMA~CQuZP8AQuZP8AACAAAENAAFgAMAAAAAAAAAAAAAAAAAA.IAAA.YAAAAAAAAAAA~CQAAAAAAAABA.QA"

/** A GPP string with the US national section (7) and a section 30 the libraries do not know. */
export const GPP_WITH_UNKNOWN_SECTION = "DBACLIY~CUAAAAAAAACA.QA~BVVVVVA"
