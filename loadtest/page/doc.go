// Package page renders a fault run as one self-contained HTML page,
// report.html: the verdict and every invariant with its evidence, an
// interactive timeline with the faults marked, and the story of each
// payment, every event of its key in order across the client, the api, the
// outbox, the workers, the psp and the faults.
//
// Build gathers a Data from what verify collected (Report and Snapshot) and
// the services' JSON log lines that name a key; Write renders it with an
// embedded template. The page fetches nothing: its CSS, script and the
// SVG it draws are inline, and its data is one JSON block in the page.
package page
