/** The preferences script (placeholder until the browser code lands). */
export const preferencesScript = "\"use strict\";\n"
export const preferencesScriptName = "preferences-00000000.js"
