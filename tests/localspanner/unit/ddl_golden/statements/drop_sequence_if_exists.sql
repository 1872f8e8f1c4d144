drop sequence if exists MySeq
