/**
 * The `privacy_page` figure: what serving a hosted privacy center costs the server, beside what
 * its budget allows, a keyed read (`GET /v1/keys/:id`, measured just before) plus one rendering
 * of the center's Markdown policy. The page is a realistic one: a policy of about 6 KB, texts in
 * two languages, the cookie table of ten published cookies. Its policy is rendered once per
 * version of the center (kept in memory), so a page served again costs the reads and the page's
 * own template.
 */
import autocannon from "autocannon"
import { renderPolicy } from "@cmp/privacy-center"

const section = (n: number) =>
  `## ${n}. What we keep and why\n\nWe keep **what you tell us** and what your browser sends us, for as long as the ` +
  `purpose needs it and no longer. See [our cookie list](/cookies) and write to [the DPO](mailto:dpo@acme.example).\n\n` +
  `| Data | Purpose | Kept |\n|---|---|---:|\n| e-mail | newsletter | 3 years |\n| orders | accounting | 10 years |\n\n` +
  `- You may ask for a copy of your data.\n- You may ask us to correct or erase it.\n- You may object to its use for marketing.\n\n` +
  `> Questions? Reach us at https://acme.example/privacy or by post.\n\n`

/** About 6 KB of Markdown, the size of a short real policy. */
export const samplePolicy = `# Privacy policy\n\n${Array.from({ length: 9 }, (_, i) => section(i + 1)).join("")}`

/** CPU milliseconds of one rendering of the policy, measured in this process after a warm-up. */
export const markdownCpuMs = (policy = samplePolicy, runs = 400): number => {
  for (let i = 0; i < 50; i++) renderPolicy(policy)
  const before = process.cpuUsage()
  for (let i = 0; i < runs; i++) renderPolicy(policy)
  const spent = process.cpuUsage(before)
  return (spent.user + spent.system) / 1000 / runs
}

type Json = (url: string, method: string, body?: unknown, token?: string) => Promise<any>

/** A privacy center worth serving, with its organization's cookies: its id. */
export const seedCenter = async (json: Json, api: string, organizationId: string, token: string): Promise<string> => {
  const property = await json(`${api}/v1/properties`, "POST", { organization_id: organizationId, name: "Shop", website: "https://shop.acme.example" }, token)
  for (let i = 0; i < 10; i++) {
    await json(`${api}/v1/cookies`, "POST", {
      property_id: property.id,
      name: `cookie_${i}`,
      domain: "shop.acme.example",
      lifetime: 86_400 * (i + 1),
      taxonomy_id: "analytics",
      status: "published"
    }, token)
  }
  const center = await json(`${api}/v1/privacy-centers`, "POST", {
    organization_id: organizationId,
    name: "Acme privacy center",
    legal_name: "Acme SA",
    customization: { logo: "https://cdn.acme.example/logo.png", colors: { primary: "#1d4f91" } },
    contact: { email: "dpo@acme.example", address: "1 rue de la Paix\n75002 Paris" },
    privacy_policy: samplePolicy,
    display_cookies: "list",
    languages: ["en", "fr"],
    content: { en: { title: "Your privacy at Acme", intro: "What we keep, and why." }, fr: { title: "Votre vie privée chez Acme" } }
  }, token)
  return center.id as string
}

/** A load of page requests, as browsers send them. */
export const getPage = (api: string, centerId: string, seconds: number, connections: number) =>
  autocannon({
    url: `${api}/privacy/${centerId}`,
    connections,
    duration: seconds,
    headers: { "accept-language": "fr-CH, fr;q=0.9, en;q=0.8", accept: "text/html" }
  })
