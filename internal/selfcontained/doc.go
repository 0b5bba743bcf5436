// Package selfcontained holds the repository to citing nothing outside it:
// its test reads every Go and Markdown file the repository keeps and fails
// on a reference to notes that live beside the repository rather than in
// it, and on a citation of a docs/ page section that does not exist.
package selfcontained
