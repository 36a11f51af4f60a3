// Package mime reads and writes the MIME side of AS2 (RFC 4130): it peels
// the encryption, signature and compression layers of an incoming message
// in whatever order the partner applied them, computes the MIC the MDN
// returns, builds outgoing messages, and writes and reads MDNs (RFC 8098 as
// AS2 uses it). The CMS work is done by package cms.
//
// # Tolerance
//
// Header fields may be folded and in any letter case, line endings may be
// CRLF or bare LF, a multipart body may have a preamble, the signature part
// may be base64 or raw binary and may lack the signer's certificate, the
// micalg may be spelled "sha-256" or "sha256", and CMS may be BER with
// indefinite lengths. Content-Transfer-Encoding is decoded at every layer;
// the MIC and the signature still cover a part exactly as it arrived.
//
// # The MIC
//
// Unpack follows RFC 4130 7.3.1: a signed message's MIC covers the first
// part of the multipart/signed, header fields included, byte for byte; an
// unsigned but encrypted or compressed one's covers the innermost decrypted
// or decompressed entity with its header fields; a bare message's covers the
// payload alone. The algorithm is the first signed-receipt-micalg we support,
// else the signature's digest, else SHA-256, and the partner's spelling of it
// is echoed. Products disagree when the request and the signature differ
// (OpenAS2 wants the requested algorithm, pyas2-lib the signature's digest),
// so UnpackOptions.MICPreference lets a partner profile choose and
// Result.MICWith gives the other value. On the sending side
// Built.ExpectedMICs holds both candidates and MatchMIC accepts either.
//
// # Memory
//
// BuildFrom reads the payload once into a buffer with room before and after
// it, so each layer's header fields and the signature part are written
// around the content rather than copying it; the MICs are computed as the
// content goes by, and a CBC-encrypted message is not held at all: WriteBody
// encrypts it on the way out. A Stream holds nothing of the message: its
// WriteBody reads the payload and writes the body in chunks, every layer a
// writer in front of the next (cms.CompressWriter, the multipart/signed with
// its digest taken in passing, cms.EncryptWriter in a goroutine of its own),
// and hands the MICs over before the body's last byte. Unpack holds each layer in memory (the body,
// the decrypted entity, the payload), bounded by the receiver's body limit
// and UnpackOptions.MaxDecompressedSize. A compressed layer is bounded
// besides by UnpackOptions.MaxDecompressionRatio times its compressed size,
// past a floor of a mebibyte, so the size of a body bounds what it can cost.
//
// # Demands
//
// UnpackOptions.RequireSigned and RequireEncrypted are checked on the layers
// as they are met: a compressed layer whose content is the document, in a
// message without a demanded signature or encryption outside it, fails with
// cms.ErrInsufficientSecurity once the content's header section is inflated,
// before the document is.
//
// # Trust
//
// Signatures are verified only against the partner certificates passed in
// (see cms.VerifyDetached); an expired partner certificate fails
// verification with cms.ErrAuthentication rather than being accepted
// silently, and SHA-1 fails with cms.ErrInsufficientSecurity unless allowed.
package mime
