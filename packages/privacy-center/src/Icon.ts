/**
 * The pages' icon: a plain shield, served same-origin. A page that names no icon makes every
 * browser ask its host for `/favicon.ico`, which no page host serves: an error answer, and an
 * error in the console, on every first visit.
 */
export const iconSvg =
  `<svg xmlns="http://www.w3.org/2000/svg" viewBox="0 0 16 16"><path fill="#4a5568" d="M8 1 2 3.5V8c0 3.2 2.6 6.2 6 7 3.4-.8 6-3.8 6-7V3.5z"/></svg>\n`

export const iconName = "icon.svg"
