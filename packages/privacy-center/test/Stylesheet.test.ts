import fc from "fast-check"
import { describe, expect, it } from "vitest"
import { contrastRatio, defaultPrimaryColour, onPrimaryColour, primaryColour, renderStylesheet } from "../src/index.js"

const primaryOf = (css: string) => /--pc-primary: ([^;]*);/.exec(css)?.[1]

describe("renderStylesheet", () => {
  it("puts the center's #rgb or #rrggbb colour in the stylesheet", () => {
    expect(primaryOf(renderStylesheet({ customization: { colors: { primary: "#336699" } } }))).toBe("#336699")
    expect(primaryOf(renderStylesheet({ customization: { colors: { primary: "#AbC" } } }))).toBe("#aabbcc")
  })

  it("takes the default colour for anything else, so nothing of it reaches the CSS", () => {
    for (const primary of ["red", "#abcd", "#12345g", "rgb(0,0,0)", "#336699; } body { display: none", "</style><script>alert(1)</script>", "", null]) {
      const css = renderStylesheet({ customization: { colors: { primary } } })
      expect(primaryOf(css)).toBe(defaultPrimaryColour)
      expect(css).not.toContain("display: none")
      expect(css).not.toContain("<")
    }
    expect(primaryOf(renderStylesheet())).toBe(defaultPrimaryColour)
    expect(primaryOf(renderStylesheet({ customization: null }))).toBe(defaultPrimaryColour)
  })

  it("writes text on the primary colour in black or white, at 4.5:1 at least", () => {
    fc.assert(
      fc.property(fc.stringMatching(/^#[0-9a-f]{6}$/), (colour) => {
        expect(primaryColour(colour)).toBe(colour)
        const css = renderStylesheet({ customization: { colors: { primary: colour } } })
        const on = /--pc-on-primary: ([^;]*);/.exec(css)?.[1]
        expect(on).toBe(onPrimaryColour(colour))
        expect(contrastRatio(colour, on!)).toBeGreaterThanOrEqual(4.5)
      })
    )
  })

  it("has no rule that loads anything from elsewhere", () => {
    const css = renderStylesheet()
    expect(css).not.toMatch(/url\(|@import|expression\(/i)
  })
})
