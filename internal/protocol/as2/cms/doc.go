// Package cms reads and writes the Cryptographic Message Syntax structures an
// AS2 exchange carries: EnvelopedData and AuthEnvelopedData (RFC 5652, 5083,
// 5084), CompressedData (RFC 3274) and detached SignedData (RFC 5652, with
// RSA-PSS from RFC 4056).
//
// Signing and verification with RSA PKCS #1 v1.5 and ECDSA go through
// github.com/smallstep/pkcs7, with the digest chosen per call. Everything else
// (encryption, key transport, compression, RSA-PSS, BER handling) is built on
// the standard library here. The pkcs7 package's encryption is not used
// because its algorithm settings are process-wide variables.
//
// # Encodings
//
// Input may be BER as well as DER: indefinite lengths and constructed
// (chunked) OCTET STRINGs are accepted everywhere, because OpenAS2 and other
// Bouncy Castle based products write them. Output is DER, but for the stream
// writers below, whose content length is not known when they start.
//
// # What streams
//
//   - DecryptTo reads an EnvelopedData from an io.Reader and writes the
//     plaintext of a CBC cipher to an io.Writer as the ciphertext arrives; only
//     the recipient infos and one cipher block are held. Because CBC carries
//     no integrity, a caller must discard what was written when DecryptTo
//     returns an error (the padding is checked at the very end).
//   - AuthEnvelopedData (AES-GCM) is not streamed: the tag follows the
//     ciphertext and no plaintext may be released before it is checked, so
//     the ciphertext is collected in memory and opened at the end.
//   - DecompressTo inflates a CompressedData from an io.Reader to an io.Writer
//     through zlib, never holding more than a buffer of either side, and stops
//     with a *DecompressionLimitError once the output passes the limit.
//   - EncryptTo streams CBC encryption for content of known size; the output
//     is DER with definite lengths computed in advance, and EncryptedSize
//     tells its length before a byte is written (an HTTP Content-Length). GCM
//     collects the content first.
//   - A Compressor deflates into the caller's buffer and returns the DER
//     header to put in front once the compressed size is known.
//   - EncryptWriter (CBC only) and CompressWriter write content of unknown
//     length as it comes: BER with indefinite lengths, the content in
//     primitive OCTET STRINGs of 128 KiB, as openssl cms -stream writes it. A
//     CompressWriter picks its zlib level from the content's first 64 KiB.
//   - Signatures need the whole content hashed before anything can be
//     written. SignDigest signs from a digest the caller computed on the way
//     (a streamed message, and RSA-PSS); Build's PKCS #1 v1.5 signatures go
//     through pkcs7 with the content.
//
// # Tolerance
//
// pyas2-lib writes RSAES-OAEP and RSASSA-PSS AlgorithmIdentifiers without
// parameters. For OAEP that is read as the RFC 4055 defaults (SHA-1), which
// the product uses. For PSS the defaults (SHA-1, salt 20) are tried, then the
// SignerInfo's digest with whatever salt the signature carries (pyas2-lib
// signs with SHA-256 and the longest salt). Each such reading is reported in
// DecryptInfo.Tolerances or SignerInfo.Tolerances.
//
// The RFC 6211 algorithm protection attribute is written when
// SignOptions.AlgorithmProtection asks for it and checked whenever a received
// signature carries it; a mismatch is ErrIntegrity.
//
// # Errors
//
// Every failure wraps one of the sentinel errors (ErrDecryption,
// ErrUnsupportedAlgorithm, ErrAuthentication, ErrIntegrity, ErrDecompression,
// ErrInsufficientSecurity, ErrMalformed), so the AS2 layer can pick the
// disposition with errors.Is.
package cms
