// Package engine is the root of pfl's pure-Go training engine: models, data, the
// federated round loop, strategies and hypernetworks live in its subpackages, built on the
// tensor API of package cuda.
package engine
