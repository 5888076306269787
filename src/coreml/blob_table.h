// Where the blobs of a MIL program come from: a package's weight.bin, or a
// program built in memory and not written yet. The MIL interpreter and the
// package writer read blobs only through this.
#pragma once

#include "coreml/milblob.h"
#include "coreml/proto/mil.pb.h"

namespace anelm::coreml {

class BlobTable {
public:
    virtual ~BlobTable() = default;
    // The blob behind a BlobFileValue, checked against the value's tensor type;
    // throws Error naming the file and offset when it does not match.
    virtual Blob blob(const ::CoreML::Specification::MILSpec::Value& value) const = 0;
};

}  // namespace anelm::coreml
