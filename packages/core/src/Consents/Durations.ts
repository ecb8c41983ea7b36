/**
 * How long a consent lasts, as a policy states it: a positive number of calendar `months`, of
 * `days` (86,400 s each, no daylight saving: everything is UTC) or of `seconds`.
 *
 * Months are added in UTC keeping the time of day, clamped to the last day of the month they
 * land in: 31 January + 1 month is 28 February (29 in a leap year). Addition is monotone (a
 * later start never ends earlier), so "has `start + duration` passed at `now`?" is the same as
 * "is `start` at or before `thresholdOf(now, duration)`?": the latest start whose end is not
 * after `now`. The filter of expired users compares stored times with that one value.
 */

export const DURATION_UNITS = ["months", "days", "seconds"] as const
export type DurationUnit = typeof DURATION_UNITS[number]

export interface Duration {
  readonly amount: number
  readonly unit: DurationUnit
}

const DAY_MS = 86_400_000

/** Days in a month of a year (`month` 0..11); `setUTCFullYear` keeps years 0..99 as such. */
export const daysIn = (year: number, month: number): number => {
  const d = new Date(0)
  d.setUTCFullYear(year, month + 1, 0)
  return d.getUTCDate()
}

/** The instant at a day of a month (0..11, may overflow into other years) and a time of day in ms. */
const at = (year: number, month: number, day: number, timeOfDay: number): number => {
  const d = new Date(0)
  d.setUTCFullYear(year, month, day)
  return d.getTime() + timeOfDay
}

/** `start` plus `months` calendar months (negative goes back), time of day kept, day clamped. */
export const addMonths = (start: number, months: number): number => {
  const d = new Date(start)
  const timeOfDay = start - at(d.getUTCFullYear(), d.getUTCMonth(), d.getUTCDate(), 0)
  const total = d.getUTCFullYear() * 12 + d.getUTCMonth() + months
  const year = Math.floor(total / 12)
  const month = total - year * 12
  return at(year, month, Math.min(d.getUTCDate(), daysIn(year, month)), timeOfDay)
}

/** The end of a period that starts at `start` (epoch ms). */
export const addDuration = (start: number, duration: Duration): number => {
  switch (duration.unit) {
    case "months":
      return addMonths(start, duration.amount)
    case "days":
      return start + duration.amount * DAY_MS
    case "seconds":
      return start + duration.amount * 1000
  }
}

/**
 * The latest start (epoch ms) whose period has ended at `now`: `addDuration(t) <= now` exactly
 * when `t <= thresholdOf(now)`. For months, in the month `amount` months before `now`'s:
 * - when that month is shorter than `now`'s day of month, every start in it ends by `now`
 *   (clamped to an earlier day): its last millisecond;
 * - else when `now` is on the last day of its month, starts on that day or later of the earlier
 *   month end on it too: its last day at `now`'s time of day;
 * - else the same day at `now`'s time of day.
 */
export const thresholdOf = (now: number, duration: Duration): number => {
  switch (duration.unit) {
    case "days":
      return now - duration.amount * DAY_MS
    case "seconds":
      return now - duration.amount * 1000
    case "months": {
      const d = new Date(now)
      const day = d.getUTCDate()
      const timeOfDay = now - at(d.getUTCFullYear(), d.getUTCMonth(), day, 0)
      const total = d.getUTCFullYear() * 12 + d.getUTCMonth() - duration.amount
      const year = Math.floor(total / 12)
      const month = total - year * 12
      const length = daysIn(year, month)
      if (day > length) return at(year, month + 1, 1, 0) - 1
      if (day === daysIn(d.getUTCFullYear(), d.getUTCMonth())) return at(year, month, length, timeOfDay)
      return at(year, month, day, timeOfDay)
    }
  }
}
