/**
 * A declaration's name ("API key", "property") in the summaries of its operations: with its
 * article, or in the plural. A host names its own resources, so the rules are general ones.
 */

/** Initialisms read letter by letter whose first letter's name starts with a vowel sound: "an API", "an SSO", "an HTTP". */
const vowelSoundingLetters = "AEFHILMNORSX"

/** Words starting with a vowel letter but the sound of a consonant ("a user", "a unique", "a one-off"). */
const consonantSoundingStart = /^(?:us[aeu]|uni(?!n)|uti|ur[aeiou]|eu|one\b|once\b)/

/** Words starting with a silent h ("an hour"). */
const silentH = /^(?:hour|honest|honou?r|heir)/

/** "a" or "an", by the sound the noun phrase starts with. */
export const articleOf = (noun: string): "a" | "an" => {
  const word = noun.trim().split(/[\s-]/)[0] ?? ""
  if (/^[A-Z]{2,}\b/.test(word)) return vowelSoundingLetters.includes(word[0]!) ? "an" : "a"
  const lower = word.toLowerCase()
  if (silentH.test(lower)) return "an"
  if (consonantSoundingStart.test(lower)) return "a"
  return /^[aeiou]/.test(lower) ? "an" : "a"
}

/** The noun phrase with its indefinite article: "an organization", "a webhook", "an API key". */
export const withArticle = (noun: string): string => `${articleOf(noun)} ${noun}`

/** The plural of a noun phrase, its last word inflected: "webhook deliveries", "properties", "API keys". */
export const pluralOf = (noun: string): string => {
  if (/[^aeiou]y$/i.test(noun)) return `${noun.slice(0, -1)}ies`
  if (/(?:s|x|z|ch|sh)$/i.test(noun)) return `${noun}es`
  return `${noun}s`
}
