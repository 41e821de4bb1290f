#include "core/json.h"

#include <gtest/gtest.h>

#include <cmath>
#include <sstream>

namespace qmlsim {
namespace {

TEST(Json, NestedContainersAndEscapes) {
  std::ostringstream s;
  JsonWriter w(s);
  w.begin_object().key("a").value(1).key("b").begin_array().value(0.5).value("x\"y\n").end_array();
  w.key("c").value(std::nan("")).key("d").value(true).key("e").begin_object().end_object();
  w.end_object();
  EXPECT_EQ(s.str(), R"({"a":1,"b":[0.5,"x\"y\n"],"c":null,"d":true,"e":{}})");
}

}  // namespace
}  // namespace qmlsim
