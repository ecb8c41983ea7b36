/**
 * The page's own words (headings, buttons, table headers, messages), in English, French,
 * German, Spanish and Italian; any other language gets English. The center's own texts come
 * from its `content`; these are the ones no organization writes.
 */

export interface Words {
  readonly skipToContent: string
  readonly privacyPolicy: string
  readonly cookies: string
  readonly cookiesCaption: string
  readonly cookieName: string
  readonly cookieDomain: string
  readonly cookieLifetime: string
  readonly cookieVendor: string
  readonly session: string
  readonly days: (n: number) => string
  readonly noCookies: string
  readonly yourChoices: string
  readonly choicesLegend: string
  readonly save: string
  readonly needsJavaScript: string
  readonly authRequired: string
  readonly noPurposes: string
  readonly contact: string
  readonly email: string
  readonly phone: string
  readonly address: string
  readonly website: string
  readonly notFoundTitle: string
  readonly notFoundText: string
  /** What the page's script shows; handed to it in `data-messages`. */
  readonly messages: {
    readonly loading: string
    readonly saved: string
    readonly error: string
    readonly wrongOrganization: string
    readonly expired: string
    readonly gpc: string
    readonly gpcOverride: string
    readonly receipt: string
  }
}

const en: Words = {
  skipToContent: "Skip to content",
  privacyPolicy: "Privacy policy",
  cookies: "Cookies",
  cookiesCaption: "The cookies we use",
  cookieName: "Name",
  cookieDomain: "Domain",
  cookieLifetime: "Lifetime",
  cookieVendor: "Vendor",
  session: "Session",
  days: (n) => (n === 1 ? "1 day" : `${n} days`),
  noCookies: "No cookies are published.",
  yourChoices: "Your choices",
  choicesLegend: "What you allow",
  save: "Save my choices",
  needsJavaScript: "Changing your choices needs JavaScript.",
  authRequired:
    "To see and change your choices, open the personal link you were sent. To get one, contact us.",
  noPurposes: "There is nothing to choose here yet.",
  contact: "Contact",
  email: "Email",
  phone: "Phone",
  address: "Postal address",
  website: "Website",
  notFoundTitle: "Page not found",
  notFoundText: "There is no privacy center at this address.",
  messages: {
    loading: "Loading your choices…",
    saved: "Your choices have been saved.",
    error: "Your choices could not be saved. Please try again.",
    wrongOrganization: "This link is not for this privacy center.",
    expired: "This link has expired. Ask for a new one.",
    gpc: "Your browser sends a Global Privacy Control signal: what it refuses stays refused unless you explicitly allow it here.",
    gpcOverride: "Allow despite my browser's signal",
    receipt: "Download your receipt"
  }
}

const fr: Words = {
  skipToContent: "Aller au contenu",
  privacyPolicy: "Politique de confidentialité",
  cookies: "Cookies",
  cookiesCaption: "Les cookies que nous utilisons",
  cookieName: "Nom",
  cookieDomain: "Domaine",
  cookieLifetime: "Durée de conservation",
  cookieVendor: "Fournisseur",
  session: "Session",
  days: (n) => (n === 1 ? "1 jour" : `${n} jours`),
  noCookies: "Aucun cookie n'est publié.",
  yourChoices: "Vos choix",
  choicesLegend: "Ce que vous acceptez",
  save: "Enregistrer mes choix",
  needsJavaScript: "Pour modifier vos choix, activez JavaScript.",
  authRequired:
    "Pour voir et modifier vos choix, ouvrez le lien personnel qui vous a été envoyé. Pour en obtenir un, contactez-nous.",
  noPurposes: "Il n'y a encore rien à choisir ici.",
  contact: "Contact",
  email: "E-mail",
  phone: "Téléphone",
  address: "Adresse postale",
  website: "Site web",
  notFoundTitle: "Page introuvable",
  notFoundText: "Il n'y a pas de centre de confidentialité à cette adresse.",
  messages: {
    loading: "Chargement de vos choix…",
    saved: "Vos choix ont été enregistrés.",
    error: "Vos choix n'ont pas pu être enregistrés. Veuillez réessayer.",
    wrongOrganization: "Ce lien ne correspond pas à ce centre de confidentialité.",
    expired: "Ce lien n'est plus valide. Demandez-en un nouveau.",
    gpc: "Votre navigateur envoie un signal Global Privacy Control : ce qu'il refuse reste refusé, sauf si vous l'acceptez expressément ici.",
    gpcOverride: "Accepter malgré le signal de mon navigateur",
    receipt: "Télécharger votre reçu"
  }
}

const de: Words = {
  skipToContent: "Zum Inhalt springen",
  privacyPolicy: "Datenschutzerklärung",
  cookies: "Cookies",
  cookiesCaption: "Die Cookies, die wir verwenden",
  cookieName: "Name",
  cookieDomain: "Domain",
  cookieLifetime: "Speicherdauer",
  cookieVendor: "Anbieter",
  session: "Sitzung",
  days: (n) => (n === 1 ? "1 Tag" : `${n} Tage`),
  noCookies: "Es sind keine Cookies veröffentlicht.",
  yourChoices: "Ihre Auswahl",
  choicesLegend: "Was Sie erlauben",
  save: "Auswahl speichern",
  needsJavaScript: "Um Ihre Auswahl zu ändern, aktivieren Sie JavaScript.",
  authRequired:
    "Um Ihre Auswahl zu sehen und zu ändern, öffnen Sie den persönlichen Link, den Sie erhalten haben. Um einen zu erhalten, kontaktieren Sie uns.",
  noPurposes: "Hier gibt es noch nichts auszuwählen.",
  contact: "Kontakt",
  email: "E-Mail",
  phone: "Telefon",
  address: "Postanschrift",
  website: "Website",
  notFoundTitle: "Seite nicht gefunden",
  notFoundText: "Unter dieser Adresse gibt es kein Datenschutzcenter.",
  messages: {
    loading: "Ihre Auswahl wird geladen …",
    saved: "Ihre Auswahl wurde gespeichert.",
    error: "Ihre Auswahl konnte nicht gespeichert werden. Bitte versuchen Sie es erneut.",
    wrongOrganization: "Dieser Link gehört nicht zu diesem Datenschutzcenter.",
    expired: "Dieser Link ist abgelaufen. Fordern Sie einen neuen an.",
    gpc: "Ihr Browser sendet ein Global-Privacy-Control-Signal: Was es ablehnt, bleibt abgelehnt, es sei denn, Sie erlauben es hier ausdrücklich.",
    gpcOverride: "Trotz des Signals meines Browsers erlauben",
    receipt: "Ihre Bestätigung herunterladen"
  }
}

const es: Words = {
  skipToContent: "Ir al contenido",
  privacyPolicy: "Política de privacidad",
  cookies: "Cookies",
  cookiesCaption: "Las cookies que utilizamos",
  cookieName: "Nombre",
  cookieDomain: "Dominio",
  cookieLifetime: "Duración",
  cookieVendor: "Proveedor",
  session: "Sesión",
  days: (n) => (n === 1 ? "1 día" : `${n} días`),
  noCookies: "No hay cookies publicadas.",
  yourChoices: "Sus preferencias",
  choicesLegend: "Lo que usted permite",
  save: "Guardar mis preferencias",
  needsJavaScript: "Para cambiar sus preferencias, active JavaScript.",
  authRequired:
    "Para ver y cambiar sus preferencias, abra el enlace personal que le enviamos. Para obtener uno, póngase en contacto con nosotros.",
  noPurposes: "Todavía no hay nada que elegir aquí.",
  contact: "Contacto",
  email: "Correo electrónico",
  phone: "Teléfono",
  address: "Dirección postal",
  website: "Sitio web",
  notFoundTitle: "Página no encontrada",
  notFoundText: "No hay ningún centro de privacidad en esta dirección.",
  messages: {
    loading: "Cargando sus preferencias…",
    saved: "Sus preferencias se han guardado.",
    error: "No se han podido guardar sus preferencias. Inténtelo de nuevo.",
    wrongOrganization: "Este enlace no corresponde a este centro de privacidad.",
    expired: "Este enlace ha caducado. Solicite uno nuevo.",
    gpc: "Su navegador envía una señal Global Privacy Control: lo que rechaza sigue rechazado, salvo que usted lo permita expresamente aquí.",
    gpcOverride: "Permitir a pesar de la señal de mi navegador",
    receipt: "Descargar su recibo"
  }
}

const it: Words = {
  skipToContent: "Vai al contenuto",
  privacyPolicy: "Informativa sulla privacy",
  cookies: "Cookie",
  cookiesCaption: "I cookie che utilizziamo",
  cookieName: "Nome",
  cookieDomain: "Dominio",
  cookieLifetime: "Durata",
  cookieVendor: "Fornitore",
  session: "Sessione",
  days: (n) => (n === 1 ? "1 giorno" : `${n} giorni`),
  noCookies: "Nessun cookie pubblicato.",
  yourChoices: "Le tue scelte",
  choicesLegend: "Cosa consenti",
  save: "Salva le mie scelte",
  needsJavaScript: "Per modificare le tue scelte, attiva JavaScript.",
  authRequired:
    "Per vedere e modificare le tue scelte, apri il link personale che ti è stato inviato. Per riceverne uno, contattaci.",
  noPurposes: "Qui non c'è ancora niente da scegliere.",
  contact: "Contatti",
  email: "E-mail",
  phone: "Telefono",
  address: "Indirizzo postale",
  website: "Sito web",
  notFoundTitle: "Pagina non trovata",
  notFoundText: "Non c'è nessun centro privacy a questo indirizzo.",
  messages: {
    loading: "Caricamento delle tue scelte…",
    saved: "Le tue scelte sono state salvate.",
    error: "Non è stato possibile salvare le tue scelte. Riprova.",
    wrongOrganization: "Questo link non appartiene a questo centro privacy.",
    expired: "Questo link è scaduto. Richiedine uno nuovo.",
    gpc: "Il tuo browser invia un segnale Global Privacy Control: ciò che rifiuta resta rifiutato, a meno che tu non lo consenta espressamente qui.",
    gpcOverride: "Consenti nonostante il segnale del mio browser",
    receipt: "Scarica la tua ricevuta"
  }
}

const byLanguage: Readonly<Record<string, Words>> = { en, fr, de, es, it }

/** The languages the page's own words are written in. */
export const wordLanguages: ReadonlyArray<string> = Object.keys(byLanguage)

/** The page's words for a language tag, by its primary subtag (`fr-CA` → French); else English. */
export const wordsFor = (lang: string): Words => {
  const primary = lang.split("-")[0].toLowerCase()
  return Object.hasOwn(byLanguage, primary) ? byLanguage[primary] : en
}
