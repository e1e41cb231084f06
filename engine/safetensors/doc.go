// Package safetensors reads and writes the safetensors file format, the checkpoint format
// of Hugging Face and timm.
//
// A file is an unsigned 64-bit little-endian header length N, then N bytes of a UTF-8 JSON
// object (padded with trailing spaces), then the raw tensor data, row-major and
// little-endian. Each header key except "__metadata__" names a tensor and gives its dtype,
// shape and [begin, end) byte offsets relative to the start of the data section;
// "__metadata__" is an optional object of strings. The tensors must cover the data section
// exactly: contiguous, without gaps or overlap.
//
// pfl uses it for two things: to read pretrained timm ViT checkpoints, and to export any
// client's personalized model so that it loads directly in PyTorch. The format was chosen
// over pickle-based .pt files because it is a plain, documented layout that pure Go can
// parse safely: reading never executes code, and every length is checked before use.
package safetensors
