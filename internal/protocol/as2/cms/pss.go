package cms

import (
	"crypto/rsa"
	"fmt"
)

// verifyPSS checks an RSASSA-PSS signature over signed with MGF1 of the same
// hash and the given salt length (rsa.PSSSaltLengthAuto accepts any).
func verifyPSS(pub *rsa.PublicKey, hash DigestAlgorithm, salt int, signed, sig []byte) error {
	h := hash.Hash()
	d := h.New()
	d.Write(signed)
	if err := rsa.VerifyPSS(pub, h, d.Sum(nil), sig, &rsa.PSSOptions{SaltLength: salt, Hash: h}); err != nil {
		return fmt.Errorf("%w: RSA-PSS signature does not verify", ErrAuthentication)
	}
	return nil
}

// verifyPSSWithoutParameters reads an RSASSA-PSS signature whose
// AlgorithmIdentifier has no parameters. Read literally (RFC 4055) that means
// SHA-1, MGF1 with SHA-1 and a 20-byte salt, which is tried first. pyas2-lib
// writes no parameters for signatures it makes with the SignerInfo's digest,
// MGF1 with the same digest and the longest salt the key allows, so that
// reading comes second, with the salt length recovered from the signature.
// It returns the hash that verified and a note saying which reading did.
func verifyPSSWithoutParameters(pub *rsa.PublicKey, digest DigestAlgorithm, signed, sig []byte) (DigestAlgorithm, string, error) {
	const defaultSalt = 20
	if verifyPSS(pub, SHA1, defaultSalt, signed, sig) == nil {
		return SHA1, "RSASSA-PSS parameters absent: verified with the RFC 4055 defaults (SHA-1, salt 20)", nil
	}
	if verifyPSS(pub, digest, rsa.PSSSaltLengthAuto, signed, sig) != nil {
		return "", "", fmt.Errorf("%w: RSA-PSS signature without parameters verifies neither with the RFC 4055 defaults (SHA-1, salt 20) nor with %s",
			ErrAuthentication, pssName(digest))
	}
	return digest, fmt.Sprintf("RSASSA-PSS parameters absent: verified as %s, salt %d", pssName(digest), pssSaltLength(pub, digest, signed, sig)), nil
}

// pssSaltLength finds the salt length of a signature known to verify with
// any salt: the usual lengths (the longest, the digest's, 20) first, then
// every other one the key allows. rsa.PSSOptions reads a length of 0 as
// "any", so a signature no positive length verifies has an empty salt.
func pssSaltLength(pub *rsa.PublicKey, digest DigestAlgorithm, signed, sig []byte) int {
	hLen := digest.Hash().Size()
	longest := (pub.N.BitLen()-1+7)/8 - hLen - 2
	tried := map[int]bool{}
	for _, n := range []int{longest, hLen, 20} {
		if n <= 0 || n > longest {
			continue
		}
		tried[n] = true
		if verifyPSS(pub, digest, n, signed, sig) == nil {
			return n
		}
	}
	for n := 1; n <= longest; n++ {
		if !tried[n] && verifyPSS(pub, digest, n, signed, sig) == nil {
			return n
		}
	}
	return 0
}

// pssName spells a digest the way the notes do: "SHA-256".
func pssName(d DigestAlgorithm) string {
	return "SHA-" + d.MICName()[len("sha-"):]
}
