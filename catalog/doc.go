// Package catalog is the model catalog of the gateway: the Model object of
// the API contract, the catalog file it is loaded from, the resolution of a
// requested id to a response, price evaluation, and hot reload.
//
// # The catalog file
//
// A YAML file (configs/models.yaml ships with the binary) with two keys:
//
//	models:   # Model objects written exactly as the API returns them, plus
//	  - id: meta-llama/llama-4-maverick
//	    aliases: [meta-llama/llama-4-maverick-17b-128e-instruct]  # other ids for it
//	    variants: [nitro, floor]                                  # served as <id>:<variant>
//	    ...
//	latest:   # tilde aliases: answered with the target plus alias_target
//	  "~meta-llama/llama-latest": meta-llama/llama-4-maverick
//
// aliases and variants are gateway-only keys and never appear in responses.
// links may be left out; it is then derived from the id (the base model's
// /api/v1/models/<author>/<slug>/endpoints, never with a variant). A "~" alias
// may also be an entry of models with its own record and an alias_target.
//
// Decoding is strict: unknown or duplicate keys, wrong types, null where the
// contract allows none and missing required keys are problems; so is any
// breach of the validation rules (enums of the contract, ids, dates, price
// strings, HHMM windows, effort order, references between entries, names
// that would mean two things). A file with problems is refused as a whole
// with a *LoadError listing all of them, each with its line, model id and
// field path. Two decisions the contract leaves open:
//
//   - instruct_type and tokenizer accept exactly the contract's values, the
//     family names filled in from the public schema it abridges (see
//     enums.go); a new family is a reviewed one-line change.
//   - "-1" is accepted for pricing.prompt and pricing.completion only, as the
//     mark of a router whose price is the routed model's; Price reports it as
//     ErrDynamicPrice rather than computing with it.
//
// # Resolution
//
// Catalog.Lookup(author, slug) takes the percent-decoded path segments
// (checking them is the HTTP layer's job) and answers, in this order of precedence: an entry of the
// file with exactly that id (including "x/y:free" entries with their own
// pricing); a variant listed on the base entry (the base model with the id
// suffixed; links still name the base); a slug alias (answered exactly as its
// target, variants included); a "~" alias (its own record, or the target with
// alias_target {slug, name} added). Anything else is not found. Every answer
// is pre-encoded once per catalog version with a strong ETag, so a lookup is
// two map reads and allocates nothing.
//
// # Reload
//
// Source holds the current *Catalog behind an atomic pointer: Reload (on
// SIGHUP) and Watch (on file changes) build a new catalog and swap it in only
// when the file is valid; otherwise the previous one keeps serving.
package catalog
