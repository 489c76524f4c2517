import java.io.*;
import java.nio.charset.StandardCharsets;
import java.util.*;
import org.apache.lucene.analysis.*;
import org.apache.lucene.analysis.standard.StandardTokenizer;
import org.apache.lucene.analysis.core.*;
import org.apache.lucene.analysis.miscellaneous.*;
import org.apache.lucene.analysis.charfilter.HTMLStripCharFilter;
import org.apache.lucene.analysis.en.EnglishAnalyzer;
import org.apache.lucene.analysis.tokenattributes.*;

// Input lines: SPEC \t TEXT (TEXT with \n, \t escapes). SPEC: charfilters;tokenizer;filters  (comma separated)
public class Oracle {
  static String unesc(String s) {
    StringBuilder b = new StringBuilder();
    for (int i = 0; i < s.length(); i++) {
      char c = s.charAt(i);
      if (c == '\\' && i + 1 < s.length()) {
        char n = s.charAt(++i);
        if (n == 'n') b.append('\n'); else if (n == 't') b.append('\t'); else if (n == 'u') { b.append((char)Integer.parseInt(s.substring(i+1,i+5),16)); i+=4; } else b.append(n);
      } else b.append(c);
    }
    return b.toString();
  }
  static String esc(String s) {
    StringBuilder b = new StringBuilder();
    for (char c : s.toCharArray()) { if (c=='"'||c=='\\') b.append('\\').append(c); else if (c=='\n') b.append("\\n"); else if (c=='\t') b.append("\\t"); else if (c=='\r') b.append("\\r"); else if (c=='\b') b.append("\\b"); else if (c=='\f') b.append("\\f"); else if (c < 0x20 || c == 0x7f) b.append(String.format("\\u%04x",(int)c)); else b.append(c);} return b.toString();
  }
  public static void main(String[] a) throws Exception {
    BufferedReader r = new BufferedReader(new InputStreamReader(System.in, StandardCharsets.UTF_8));
    PrintStream out = new PrintStream(System.out, true, "UTF-8");
    String line;
    while ((line = r.readLine()) != null) {
      if (line.isEmpty()) continue;
      int tab = line.indexOf('\t');
      String spec = line.substring(0, tab); String text = unesc(line.substring(tab+1));
      String[] parts = spec.split(";", -1);
      Reader reader = new StringReader(text);
      for (String cf : parts[0].split(",")) { if (cf.equals("html_strip")) reader = new HTMLStripCharFilter(reader); }
      String[] tk = parts[1].split(":");
      Tokenizer t;
      int max = tk.length > 1 ? Integer.parseInt(tk[1]) : 255;
      switch (tk[0]) {
        case "standard": { StandardTokenizer s = new StandardTokenizer(); s.setMaxTokenLength(max); t = s; break; }
        case "letter": t = new LetterTokenizer(); break;
        case "whitespace": t = new WhitespaceTokenizer(TokenStream.DEFAULT_TOKEN_ATTRIBUTE_FACTORY, max); break;
        case "keyword": t = new KeywordTokenizer(); break;
        default: throw new RuntimeException(tk[0]);
      }
      t.setReader(reader);
      TokenStream ts = t;
      if (parts.length > 2 && !parts[2].isEmpty()) for (String f : parts[2].split(",")) {
        String[] fp = f.split(":");
        switch (fp[0]) {
          case "lowercase": ts = new org.apache.lucene.analysis.LowerCaseFilter(ts); break;
          case "uppercase": ts = new UpperCaseFilter(ts); break;
          case "asciifolding": ts = new ASCIIFoldingFilter(ts, fp.length > 1); break;
          case "stop": ts = new org.apache.lucene.analysis.StopFilter(ts, EnglishAnalyzer.ENGLISH_STOP_WORDS_SET); break;
          case "length": ts = new LengthFilter(ts, Integer.parseInt(fp[1]), Integer.parseInt(fp[2])); break;
          case "trim": ts = new TrimFilter(ts); break;
          case "truncate": ts = new TruncateTokenFilter(ts, Integer.parseInt(fp[1])); break;
          default: throw new RuntimeException(fp[0]);
        }
      }
      CharTermAttribute term = ts.addAttribute(CharTermAttribute.class);
      OffsetAttribute off = ts.addAttribute(OffsetAttribute.class);
      TypeAttribute type = ts.addAttribute(TypeAttribute.class);
      PositionIncrementAttribute pi = ts.addAttribute(PositionIncrementAttribute.class);
      ts.reset();
      int pos = -1;
      StringBuilder o = new StringBuilder("[");
      boolean first = true;
      while (ts.incrementToken()) {
        pos += pi.getPositionIncrement();
        if (!first) o.append(","); first = false;
        o.append("[\"").append(esc(term.toString())).append("\",").append(off.startOffset()).append(",").append(off.endOffset()).append(",\"").append(type.type()).append("\",").append(pos).append("]");
      }
      ts.end(); ts.close();
      out.println(o.append("]"));
    }
  }
}
