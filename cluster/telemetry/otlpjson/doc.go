// Package otlpjson is t2t's one span file schema: the OTLP JSON encoding of
// trace data (ExportTraceServiceRequest), as the OpenTelemetry Collector's
// file exporter writes it and as OTLP/HTTP carries it with
// Content-Type application/json. telemetry.FileExporter writes these types
// and package traces reads them, so the two cannot drift apart.
//
// A span file holds one TracesData per line:
//
//	{"resourceSpans":[{"resource":{"attributes":[{"key":"service.name","value":{"stringValue":"t2t"}},
//	  {"key":"t2t.node","value":{"stringValue":"rollout-1"}}]},
//	 "scopeSpans":[{"scope":{"name":"t2t/actors"},"spans":[{"traceId":"5b8efff798038103d269b633813fc60c",
//	  "spanId":"eee19b7ec3c1b174","parentSpanId":"eee19b7ec3c1b173","name":"work_unit","kind":5,
//	  "startTimeUnixNano":"1544712660000000000","endTimeUnixNano":"1544712661000000000",
//	  "attributes":[{"key":"t2t.stage","value":{"intValue":"3"}}],"status":{}}]}]}]}
//
// It follows the ProtoJSON mapping with OTLP's exceptions: trace and span IDs
// are lowercase hex (not base64), field names are lowerCamelCase, 64-bit
// integers (times, intValue) are decimal strings, enums (kind, status code)
// are numbers, doubleValue is a number or "NaN", "Infinity", "-Infinity".
// When reading, 64-bit integers and enums are also accepted as numbers or
// names, and unknown fields are ignored.
//
// The package only declares types; it does no I/O and holds no state.
package otlpjson
