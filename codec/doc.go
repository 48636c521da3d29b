// Package codec reads and writes the JSON forms of the domain types: the API form of an item
// (responses), its stored form (the canonical document the stores keep) and the strict
// decoding of item objects in requests. Every codec walks one field table per type, built once
// by reflection from the struct tags of the root types; nothing lists an item's keys by hand.
//
// # The description
//
// A field's wire key is its `json:"name"` tag, and the struct's field order is the wire order.
// A field without a json tag, or tagged `json:"-"`, is not on the wire. A `gtc:"..."` tag
// holds a comma-separated list of wire attributes:
//
//	api        the key is written in the API form only; the stored form neither writes nor
//	           reads it (_etag, tags).
//	readonly   the server sets the value: a request may carry the key, and its value is
//	           ignored (computedTags, _etag).
//	derived=K  the API form writes a computed key K right after this field; a request may
//	           carry K and it is ignored. tags, after computedTags, is the sorted,
//	           de-duplicated union of manualTags and computedTags (Item.Tags).
//	required   a request must carry the key.
//	nullable   a request may send null for a non-pointer value: it reads as the default
//	           (or the zero value). On a raw JSON object (with object), nil is written null
//	           instead of {}. Pointers, maps and raw JSON values are nullable by type.
//	default=V  a zero value is written as V, and a missing or null request value reads as V
//	           (status draft, docType ground-truth-item, schemaVersion v2, callType tool,
//	           plugin version 1.0).
//	sparse     a nil value is written null in the API form and left out of the stored form
//	           (the nullable top-level keys of an item). On an int64, zero counts as nil
//	           for the stored form and is written 0 in the others (an item's revision).
//	omitnil    a nil value leaves the key out of every form (a history entry's turnId,
//	           stepId and expectedBehavior; an empty non-nil expectedBehavior is written []).
//	object     a raw JSON value (json.RawMessage) that must be an object; nil is written {}
//	           unless the field is also nullable.
//	orstring   with object: a string is accepted too (an expected tool's arguments).
//	trim       a request's string is trimmed of surrounding white space.
//	nonblank   a request's string must not be blank.
//
// Rules that follow from the Go type, not from a tag:
//
//   - time.Time and *time.Time are RFC 3339 date-times in UTC: milliseconds in the API form
//     (gtc.APITimeLayout), microseconds in the stored form (gtc.StoredTimeLayout); any RFC
//     3339 value is read.
//   - A json.RawMessage without object is any JSON value, written verbatim; nil is null.
//   - Maps are objects written with their keys sorted; a nil map is null. Slices are arrays;
//     a nil slice is written [] (except with omitnil).
//   - Strings are escaped minimally by jsontext: `"` and `\`, the short forms \b \f \n \r \t,
//     other control characters as \u00XX; invalid UTF-8 is written as U+FFFD.
//   - Reading the stored form is lenient: unknown keys are ignored, a missing or null key reads
//     as its default, and null in a string reads as "".
package codec
