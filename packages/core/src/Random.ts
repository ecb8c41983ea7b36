/** Random tokens from Web Crypto (global in Node 20), so core needs no Node import. */
export const randomToken = (bytes = 32): string => {
  const buf = new Uint8Array(bytes)
  globalThis.crypto.getRandomValues(buf)
  let s = ""
  for (const b of buf) s += String.fromCharCode(b)
  return btoa(s).replace(/\+/g, "-").replace(/\//g, "_").replace(/=+$/, "")
}
