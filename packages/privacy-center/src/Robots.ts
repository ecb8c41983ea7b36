/**
 * `robots.txt` of a privacy center's host, from its domain's `bots_crawl`: `disallow_all` keeps
 * every crawler out; `allow_all`, or none set, lets them read the page (it is public, and a
 * privacy policy is meant to be found).
 */
export const renderRobotsTxt = (botsCrawl: "allow_all" | "disallow_all" | null | undefined): string =>
  botsCrawl === "disallow_all" ? "User-agent: *\nDisallow: /\n" : "User-agent: *\nDisallow:\n"
